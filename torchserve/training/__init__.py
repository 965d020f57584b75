"""Making and judging the models, none of it served: synthetic drawings with their labels
(`synth/`), training (`data`, `loop`, `losses`; `python -m torchserve.training`),
evaluation (`evaluate`, `metrics`, `rephoto`: `python -m torchserve.training.evaluate`).
The archives (build_archives.py) carry `handlers/` and `model/` only; docs/MODELS.md says
how the committed weights were made."""
