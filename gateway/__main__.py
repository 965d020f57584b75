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


def gunicorn_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "-c", str(SETTINGS), *args]


if __name__ == "__main__":
    command = gunicorn_command(sys.argv[1:])
    # Replaced, not wrapped: signals (SIGTERM on a rollout) reach gunicorn's master directly.
    os.execv(command[0], command)
