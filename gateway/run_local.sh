#!/usr/bin/env bash
# `make run`: TorchServe and the gateway on this machine, until Ctrl-C (or any other stop).
#
# Runs the supervisor, torchserve/run_local.py (it sits on the model side, beside the
# TorchServe start/stop code it uses): it starts TorchServe (127.0.0.1:8080-8082) and
# gunicorn with the gevent worker (`python -m gateway`, 127.0.0.1:5000) side by side, files
# stored under var/animations and served by the gateway, waits for /ready and prints a curl
# line to try. Ctrl-C, SIGTERM (to it or its process group), a closed terminal or the death
# of whatever started it stop both servers; what an earlier run left running is stopped
# and replaced; anything else on the ports is named, with the command that stops it.
# Every gateway setting can be overridden from the environment (see README, Configuration).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python="${PYTHON:-$repo/.venv/bin/python}"
# exec: the supervisor takes this process's place (and pid), so signals reach it directly;
# it asks the kernel for SIGTERM when $PPID dies, and checks it has not died already.
RUN_LOCAL_PARENT=$PPID exec "$python" -m torchserve.run_local "$@"
