"""Dockerfile.model, checked without a Docker daemon: lint, and that it packs what serving needs."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

from torchserve.build_archives import ARCHIVES, RUNTIME_PACKAGES

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile.model"
HADOLINT = Path(sys.executable).with_name("hadolint")


def stages() -> dict[str, str]:
    """Text of each build stage, by its name (the last, unnamed one is "final")."""
    text = DOCKERFILE.read_text()
    parts = re.split(r"^FROM ", text, flags=re.M)[1:]
    named = {}
    for part in parts:
        header = part.splitlines()[0]
        name = header.split(" AS ")[1].strip() if " AS " in header else "final"
        named[name] = "FROM " + part
    return named


def test_hadolint_finds_nothing_not_even_a_warning():
    run = subprocess.run(
        [HADOLINT, "--failure-threshold", "warning", "--no-color", DOCKERFILE],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_archives_stage_copies_everything_an_archive_is_built_from():
    archives = stages()["archives"]
    for package in RUNTIME_PACKAGES:
        assert f"COPY torchserve/{package}/ torchserve/{package}/" in archives
    assert "COPY torchserve/weights/" in archives
    assert "torchserve/build_archives.py" in archives
    handlers = {archive.handler for archive in ARCHIVES.values()}
    assert all((REPO / "torchserve" / "handlers" / handler).is_file() for handler in handlers)


def test_models_argument_picks_one_of_two_runtimes():
    named = stages()
    assert re.search(r"^ARG MODELS=project$", DOCKERFILE.read_text(), flags=re.M)
    assert named["final"].startswith("FROM runtime-${MODELS}")
    assert {"runtime-project", "runtime-animateddrawings"} <= set(named)
    official = named["runtime-animateddrawings"]
    for name, archive in ARCHIVES.items():
        # AnimatedDrawings has no segmenter: their image serves the other two.
        fetched = f"/releases/download/v0.0.1/{name}.mar" in official
        assert fetched != archive.optional
    for pin in ("mmcv-full==1.7.0", "mmdet==2.27.0", "mmpose==0.29.0"):
        assert pin in official


def test_project_runtime_pins_the_model_extra_of_setup_cfg():
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    model_pins = setup["options.extras_require"]["model"].split()
    runtime = stages()["runtime-project"]
    for pin in model_pins:
        if not pin.startswith("torch-model-archiver"):
            assert pin in runtime, f"{pin} from setup.cfg is not what the image installs"


def test_image_runs_as_a_numeric_non_root_user_with_the_repo_config():
    final = stages()["final"]
    user = re.search(r"^USER (\d+)(?::(\d+))?$", final, flags=re.M)
    assert user and int(user.group(1)) != 0
    assert "COPY torchserve/config.properties" in final
    assert 'echo "enable_envvars_config=true" >>' in final  # TS_INFERENCE_ADDRESS works
    assert '"--disable-token-auth"' in final and '"--foreground"' in final
    assert re.findall(r"^EXPOSE (.+)$", final, flags=re.M) == ["8080"]
