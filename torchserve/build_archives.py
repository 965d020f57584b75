"""Build the three TorchServe archives (.mar) from the repository: handler + model code + weights.

    python -m torchserve.build_archives [--weights-dir DIR] [--model-store DIR] [NAME ...]

`make models` calls this once per archive whose sources changed. Each archive carries the
`torchserve.handlers` and `torchserve.model` packages and the shared image decoding policy
(`animation/images.py`), so it runs on a TorchServe that has only torch and Pillow installed
(the Docker image), not just from this checkout.

An archive's version is `VERSION` plus a digest of everything it carries (code and
weights): TorchServe's management API reports it, and the gateway keys stored GIFs by it,
so new weights or handler code never serve GIFs the old model made.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent  # torchserve/
REPO = PACKAGE.parent
VERSION = "1.0"
# The packages an archive needs at run time; training and data generation stay out.
RUNTIME_PACKAGES = ("handlers", "model")
# Modules of the `animation` library the handlers import (numpy and Pillow only).
SHARED_MODULES = ("__init__.py", "images.py")
# Workers and batching, carried by every archive (they do not change what a model answers).
MODEL_CONFIG = PACKAGE / "model-config.yaml"


@dataclass(frozen=True)
class Archive:
    name: str  # the TorchServe model name, as in AnimatedDrawings
    handler: str  # file in torchserve/handlers/
    weights: str  # file in the weights directory
    more_weights: tuple[str, ...] = ()  # carried beside it (the handler loads them if there)
    # AnimatedDrawings has no such model: a model store without it (theirs) still serves,
    # and the gateway falls back to its own segmentation.
    optional: bool = False


ARCHIVES = {
    archive.name: archive
    for archive in (
        Archive(
            "drawn_humanoid_detector", "detector_handler.py", "detector.pt", ("person_detector.pt",)
        ),
        Archive("drawn_humanoid_pose_estimator", "pose_handler.py", "pose.pt"),
        Archive("drawn_humanoid_segmenter", "segmenter_handler.py", "segmenter.pt", optional=True),
    )
}
OPTIONAL_MODELS = frozenset(name for name, archive in ARCHIVES.items() if archive.optional)


def stage_code(into: Path) -> Path:
    """Copy the runtime Python code into `into`/torchserve and `into`/animation (sources only)."""
    root = into / "torchserve"
    root.mkdir(parents=True)
    shutil.copy2(PACKAGE / "__init__.py", root / "__init__.py")
    for package in RUNTIME_PACKAGES:
        shutil.copytree(
            PACKAGE / package,
            root / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pt"),
        )
    shared = into / "animation"
    shared.mkdir()
    for module in SHARED_MODULES:
        shutil.copy2(REPO / "animation" / module, shared / module)
    return into


def archive_version(code: Path, weights: list[Path]) -> str:
    """`VERSION`.<digest of the staged code and all the weights> (the handler is staged code)."""
    digest = hashlib.sha256()
    files = {p.relative_to(code).as_posix(): p for p in code.rglob("*") if p.is_file()}
    files.update((path.name, path) for path in weights)
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].read_bytes())
    return f"{VERSION}.{digest.hexdigest()[:12]}"


def console_script(name: str) -> str:
    """`name` installed beside the running interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} not found: pip install -e '.[model]'")
    return found


def build(
    archive: Archive, weights_dir: Path, model_store: Path, version: str | None = None
) -> Path:
    """Write `model_store`/<name>.mar, replacing an older one only once the new one is complete.

    `version` defaults to `archive_version`, which changes with the code and the weights.
    """
    weights = [weights_dir / name for name in (archive.weights, *archive.more_weights)]
    for path in weights:
        if not path.is_file():
            raise FileNotFoundError(f"missing weights {path} (train them or pass --weights-dir)")
    model_store.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mar-") as scratch:
        scratch_dir = Path(scratch)
        code = stage_code(scratch_dir / "code")
        export = scratch_dir / "export"
        export.mkdir()
        command = [
            console_script("torch-model-archiver"),
            "--model-name",
            archive.name,
            "--version",
            version or archive_version(code, weights),
            "--handler",
            str(PACKAGE / "handlers" / archive.handler),
            "--serialized-file",
            str(weights[0]),
            "--extra-files",
            ",".join(map(str, [code, *weights[1:]])),
            "--config-file",
            str(MODEL_CONFIG),
            "--export-path",
            str(export),
        ]
        # The archiver assembles in $TMPDIR/<model name>: a private TMPDIR lets builds run at once.
        env = {**os.environ, "TMPDIR": str(scratch_dir)}
        subprocess.run(command, check=True, env=env)
        target = model_store / f"{archive.name}.mar"
        shutil.move(export / target.name, target.with_suffix(".mar.part"))
        target.with_suffix(".mar.part").replace(target)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(ARCHIVES)}")
    parser.add_argument("--weights-dir", type=Path, default=PACKAGE / "weights")
    parser.add_argument("--model-store", type=Path, default=PACKAGE / "model-store")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(ARCHIVES))
    if unknown:
        parser.error(f"unknown archive {', '.join(unknown)}; known: {', '.join(ARCHIVES)}")
    for name in args.names or ARCHIVES:
        try:
            print(f"built {build(ARCHIVES[name], args.weights_dir, args.model_store)}")
        except FileNotFoundError as error:
            raise SystemExit(f"build_archives: {error}") from None


if __name__ == "__main__":
    main()
