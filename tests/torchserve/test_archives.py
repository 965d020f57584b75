"""`make models`: what goes into each .mar, and that make rebuilds only what changed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from torchserve.build_archives import ARCHIVES

REPO = Path(__file__).resolve().parents[2]


def make(model_store: Path, *flags: str) -> subprocess.CompletedProcess:
    # -o: never reinstall .venv from a test, whatever setup.cfg's age.
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", *flags]
    command += [f"MODEL_STORE={model_store}", "models"]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def model_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("model-store")
    built = make(store)
    assert built.returncode == 0, built.stdout + built.stderr
    return store


@pytest.mark.parametrize("name", list(ARCHIVES))
def test_archive_carries_handler_model_code_and_weights(model_store, name):
    archive = ARCHIVES[name]
    with zipfile.ZipFile(model_store / f"{name}.mar") as mar:
        files = set(mar.namelist())
        manifest = json.loads(mar.read("MAR-INF/MANIFEST.json"))
    assert manifest["model"]["modelName"] == name
    assert manifest["model"]["handler"] == archive.handler
    assert manifest["model"]["serializedFile"] == archive.weights
    assert {archive.handler, archive.weights, *archive.more_weights} <= files
    code = {p.relative_to(REPO).as_posix() for p in (REPO / "torchserve").glob("*/*.py")}
    needed = {path for path in code if path.split("/")[1] in ("handlers", "model")}
    assert needed <= files
    assert not any(path.startswith(("torchserve/synth", "torchserve/training")) for path in files)
    # The decoding policy shared with the gateway, so the handlers import it from the archive.
    assert {"animation/__init__.py", "animation/images.py"} <= files
    assert manifest["model"]["configFile"] in files  # workers and batching
    assert re.fullmatch(r"1\.0\.[0-9a-f]{12}", manifest["model"]["modelVersion"])
    assert not any("__pycache__" in path for path in files)


def test_make_models_rebuilds_only_archives_older_than_their_sources(model_store):
    assert make(model_store, "-q").returncode == 0  # up to date: nothing to do
    pose = model_store / "drawn_humanoid_pose_estimator.mar"
    detector = model_store / "drawn_humanoid_detector.mar"
    weights = REPO / "torchserve" / "weights" / "pose.pt"
    older = weights.stat().st_mtime - 60
    os.utime(pose, (older, older))  # as if pose.pt changed after the archive was built
    dry_run = make(model_store, "-n")
    assert "drawn_humanoid_pose_estimator" in dry_run.stdout
    assert "drawn_humanoid_detector" not in dry_run.stdout
    rebuilt = make(model_store)
    assert rebuilt.returncode == 0 and pose.stat().st_mtime > weights.stat().st_mtime
    assert detector.stat().st_mtime < pose.stat().st_mtime
