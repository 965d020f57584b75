"""The gateway's image and process settings: no torch, non-root, gevent, env-driven."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BLOCK_TORCH = """
import importlib.abc, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'torchvision', 'torchserve', 'ts'):
            raise ImportError(f'{name} must not be imported by the gateway')
sys.meta_path.insert(0, NoTorch())
import pkgutil, importlib, gateway, animation
for package in (gateway, animation):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):
        if not module.name.startswith(('gateway.tools', 'animation.tools')):  # not shipped
            importlib.import_module(module.name)
from gateway.app import create_app
create_app()
print('ok')
"""


def test_gateway_and_animation_import_without_torch():
    run = subprocess.run([sys.executable, "-c", BLOCK_TORCH], cwd=REPO, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-2000:]


def test_dockerfile_installs_the_wheel_slim_non_root_and_torch_free():
    text = (REPO / "Dockerfile.gateway").read_text()
    assert re.findall(r"^FROM (\S+)", text, re.M) == ["python:3.11-slim"] * 2
    build, final = re.split(r"^FROM ", text, flags=re.M)[1:]
    # The build stage makes the wheel and installs it with the gateway extra, nothing else.
    installs = [line for line in build.splitlines() if re.search(r"pip (install|wheel)", line)]
    assert any("pip wheel" in line and "--no-deps" in line for line in installs)
    assert any("[gateway]" in line and ".whl" in build for line in installs)
    assert "uninstall" not in text and "PYTHONPATH" not in text
    assert not any("torch" in line or "model" in line for line in installs)
    # The final stage gets the venv only: the code runs from the installed wheel.
    assert re.findall(r"^COPY (.*)", final, re.M) == ["--from=build /opt/venv /opt/venv"]
    user = re.findall(r"^USER (\S+)", final, re.M)
    assert user and not user[-1].startswith(("root", "0"))
    assert final.splitlines()[-1] == 'CMD ["python", "-m", "gateway"]'
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", ".git", "var"} <= set(ignored)


def test_gunicorn_settings_come_from_the_environment(monkeypatch):
    conf_path = str(REPO / "gateway" / "gunicorn.conf.py")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/tmp/not-used")
    conf = runpy.run_path(conf_path)
    assert conf["worker_class"] == "gateway.ops.gunicorn_worker.GatewayWorker"
    assert conf["wsgi_app"] == "gateway.app:create_app()"
    assert conf["bind"] == ["127.0.0.1:5000"] and conf["workers"] == 1
    # Recycling the only worker would leave nothing answering while it drains.
    assert conf["max_requests"] == 0
    assert conf["graceful_timeout"] >= 25 and conf["timeout"] >= conf["graceful_timeout"]
    monkeypatch.setenv("GUNICORN_BIND", "0.0.0.0:8000")
    monkeypatch.setenv("GUNICORN_WORKERS", "3")
    monkeypatch.setenv("GUNICORN_MAX_REQUESTS", "5000")
    conf = runpy.run_path(conf_path)
    assert conf["bind"] == ["0.0.0.0:8000"] and conf["workers"] == 3
    assert conf["max_requests"] == 5000 and conf["max_requests_jitter"] == 500
