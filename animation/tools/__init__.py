"""Tools around the library, from a checkout: the benchmark (bench: `make bench`), the mask
evaluation on real drawings (segment_eval) and the generated test character they and the
tests use (testchar). Not part of the library: the wheel does not ship them."""
