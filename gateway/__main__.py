"""`python -m gateway [GUNICORN OPTION ...]`: gunicorn with the gateway's settings.

The settings file, gunicorn.conf.py, is found beside this module, so the same command
starts the gateway from the checkout and from an installed wheel (the image's CMD). Every
setting comes from the environment (README, Configuration); options given here go to
gunicorn after it, e.g. `python -m gateway --bind 0.0.0.0:8000`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SETTINGS = Path(__file__).resolve().with_name("gunicorn.conf.py")
USAGE = """\
usage: python -m gateway [GUNICORN OPTION ...]

The drawn-animation gateway: gunicorn with the gevent worker, serving POST /animate,
POST /annotate, GET / (the page) and the rest (GET /openapi.json describes them all).

It listens on GUNICORN_BIND (default 127.0.0.1:5000) and reads every other setting from
the environment: TORCHSERVE_URL, TORCHSERVE_MANAGEMENT_URL, STORAGE_URL, MAX_UPLOAD_BYTES,
MAX_INFLIGHT, RENDER_WORKERS, API_KEY, ... (the README's Configuration lists them all,
with their defaults).

Options given here go to gunicorn after the gateway's settings file, e.g.
  python -m gateway --bind 0.0.0.0:8000
(`python -m gunicorn --help` lists gunicorn's own options.)
"""


def gunicorn_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "-c", str(SETTINGS), *args]


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(USAGE, end="")
        sys.exit(0)
    command = gunicorn_command(sys.argv[1:])
    # Replaced, not wrapped: signals (SIGTERM on a rollout) reach gunicorn's master directly.
    os.execv(command[0], command)
