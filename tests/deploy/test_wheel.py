"""The wheel works outside the checkout, with the gateway extra only, as the image runs it.

The wheel is built from exactly the files Dockerfile.gateway copies into its build stage,
and installed with the `gateway` extra into a fresh virtualenv (no system site packages)
under a temporary folder; every command then runs from another temporary folder, with no
PYTHONPATH, so nothing can come from the checkout. pip gets the same versions as the
development venv (a constraints file from its `pip freeze`), from wherever pip is
configured to look, without compiling bytecode (the slow part of installing scipy).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import requests
from PIL import Image

from animation.motions import motion_table
from tests.support.s3 import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SHIPPED_MOTIONS = set(motion_table())  # the checkout's table: the wheel must carry them all
CHARACTER = REPO / "tests" / "animation" / "data" / "ad_character"


@dataclass
class Installed:
    wheel: Path
    python: Path
    workdir: Path  # somewhere that is not the checkout
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.python), *args], cwd=self.workdir, env=self.env,
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip


def site_packages(installed: Installed) -> str:
    return str(installed.python.parents[1] / "lib")


def build_stage_copies() -> list[str]:
    """The paths Dockerfile.gateway's build stage copies from the build context."""
    text = (REPO / "Dockerfile.gateway").read_text()
    build = re.split(r"^FROM ", text, flags=re.M)[1]
    copied = []
    for line in build.splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            copied += line.split()[1:-1]
    return copied


def pip(*args: str) -> None:
    run = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "src"
    source.mkdir()
    for name in build_stage_copies():
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
        else:
            shutil.copy2(origin, source / name)
    # --no-build-isolation: the dev venv's setuptools and wheel, not a download per run.
    pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(root / "dist"),
        str(source))  # fmt: skip
    (wheel,) = (root / "dist").glob("drawn_animation-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    freeze = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    constraints = root / "constraints.txt"
    constraints.write_text(freeze)
    pip("--python", str(venv / "bin" / "python"), "install", "--no-compile",
        "-c", str(constraints), f"{wheel}[gateway]")  # fmt: skip
    workdir = root / "elsewhere"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    yield Installed(wheel, venv / "bin" / "python", workdir, env)


def test_the_wheel_carries_the_data_and_not_the_model_side(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert not [n for n in names if n.startswith("torchserve")]
    assert {f"animation/shipped_motions/{m}.bvh" for m in SHIPPED_MOTIONS} <= names
    assert {"animation/shipped_motions/motions.yaml", "gateway/models.yaml",
            "gateway/gunicorn.conf.py", "gateway/sample_drawing.jpg",
            "gateway/sample_drawing.json"} <= names  # fmt: skip
    # Every module of the two packages, subpackages included (find_packages in setup.py),
    # but their tools: benchmarks, the load test, make run's supervisor, test helpers.
    tracked = subprocess.run(["git", "ls-files", "animation", "gateway"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    tools = {p for p in tracked if p.startswith(("animation/tools/", "gateway/tools/"))}
    assert {p for p in tools if p.endswith(".py")}  # there are some, and they stay out
    assert {p for p in tracked if p.endswith(".py")} - tools <= names
    assert not [n for n in names if n.startswith(("animation/tools/", "gateway/tools/"))]
    assert not [n for n in names if "bench" in n or "loadtest" in n or "load_clients" in n]


def test_installed_packages_come_from_the_venv_and_import_with_the_gateway_extra_only(installed):
    code = """
import importlib, importlib.util, pkgutil, animation, gateway
print(animation.__file__); print(gateway.__file__)
print(importlib.util.find_spec('torchserve'))
for package in (animation, gateway):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):
        if not module.name.endswith('__main__'):
            importlib.import_module(module.name)
print('imported all')
"""
    run = installed.run("-c", code)
    assert run.returncode == 0, run.stderr
    animation_file, gateway_file, torchserve_spec, done = run.stdout.split("\n")[:4]
    site = site_packages(installed)
    assert animation_file.startswith(site) and gateway_file.startswith(site)
    assert torchserve_spec == "None" and done == "imported all"


def test_animation_cli_lists_the_motions_and_renders_outside_the_checkout(installed):
    listing = installed.run("-m", "animation", "motions", "--json")
    assert listing.returncode == 0, listing.stderr
    assert {row["name"] for row in json.loads(listing.stdout)} == SHIPPED_MOTIONS
    character = shutil.copytree(CHARACTER, installed.workdir / "character")
    out = installed.workdir / "out" / "dab.gif"
    render = installed.run("-m", "animation", "render", "--character", str(character),
                           "--motion", "dab", "--out", str(out), "--size", "128",
                           "--max-frames", "8", "--workers", "1")  # fmt: skip
    assert render.returncode == 0, render.stderr
    with Image.open(out) as gif:
        assert gif.format == "GIF" and gif.n_frames == 8 and max(gif.size) == 128


def test_the_tools_are_not_installed_and_the_gateway_extra_needs_no_psutil(installed):
    run = installed.run("-m", "gateway.tools.loadtest", "--help")
    assert run.returncode != 0 and "No module named 'gateway.tools'" in run.stderr
    assert installed.run("-c", "import psutil").returncode != 0  # the load test's, not ours


def test_gunicorn_serves_the_installed_gateway_with_the_gevent_worker(installed):
    port = free_port()
    env = {**installed.env, "GUNICORN_BIND": f"127.0.0.1:{port}", "RENDER_WORKERS": "1",
           "STORAGE_URL": f"file://{installed.workdir / 'animations'}",
           "TORCHSERVE_URL": "http://127.0.0.1:9", "TORCHSERVE_MANAGEMENT_URL": "http://127.0.0.1:9"}  # fmt: skip
    log = installed.workdir / "gunicorn.log"
    with log.open("wb") as out:
        # The image's CMD: python -m gateway (gunicorn with the package's gunicorn.conf.py).
        server = subprocess.Popen([str(installed.python), "-m", "gateway"], cwd=installed.workdir,
                                  env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)  # fmt: skip
    try:
        deadline, reply = time.monotonic() + 60, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                reply = requests.get(f"http://127.0.0.1:{port}/motions", timeout=2)
                break
            except requests.RequestException:
                time.sleep(0.2)
        assert reply is not None and reply.status_code == 200, log.read_text()[-3000:]
        assert {m["name"] for m in reply.json()["motions"]} == SHIPPED_MOTIONS
        # A preview comes from the figure the wheel ships (gateway/preview_character).
        preview = requests.get(f"http://127.0.0.1:{port}/motions/clap/preview.gif", timeout=60)
        assert preview.status_code == 200 and preview.content.startswith(b"GIF89a"), preview.text
        # The project's worker: gunicorn's gevent worker refusing a full house at the head.
        assert "Using worker: gateway.ops.gunicorn_worker.GatewayWorker" in log.read_text()
        settings = psutil.Process(server.pid).cmdline()[-1]  # python -m gunicorn -c SETTINGS
        assert settings.startswith(site_packages(installed)) and settings.endswith(
            "gateway/gunicorn.conf.py"
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
