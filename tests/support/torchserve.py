"""A real TorchServe for the tests: the repo's config, handlers, model code and weights.

`torchserve_server` (session scope) builds the three archives from the working tree into a
temporary model store (under a second each, so tests never run stale handler code), writes
a copy of torchserve/config.properties listening on free loopback ports, starts TorchServe
with its own TEMP and log folder, waits for a READY worker of each model and yields the
`torchserve.server.TorchServe` instance:

    torchserve_server.inference_url     # http://127.0.0.1:<port>
    torchserve_server.management_url
    torchserve_server.pid               # process group of launcher, Java frontend, workers
    torchserve_server.kill() / .stop() / .start() / .ensure_running()
    torchserve_server.log_dir

A test that kills or stops it brings it back before it ends
(`try: ... finally: torchserve_server.ensure_running()`), since the instance is shared.
It is stopped at the end of the session whatever happened.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from torchserve.build_archives import ARCHIVES, build
from torchserve.server import PACKAGE, TorchServe, private_instance

WEIGHTS_DIR = PACKAGE / "weights"


def make_torchserve(
    root: Path, weights_dir: Path = WEIGHTS_DIR, names: tuple[str, ...] = tuple(ARCHIVES)
) -> TorchServe:
    """A TorchServe (not started) over archives built now from the working tree, under `root`:
    those of `names` only (leave the segmenter out for a model store like AnimatedDrawings')."""
    model_store = root / "model-store"
    for name in names:
        build(ARCHIVES[name], weights_dir, model_store)
    return private_instance(root, model_store)


@pytest.fixture(scope="session")
def torchserve_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    server = make_torchserve(tmp_path_factory.mktemp("torchserve"))
    try:
        server.start()
        yield server
    finally:
        server.stop()
