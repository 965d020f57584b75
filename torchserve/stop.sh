#!/usr/bin/env bash
# Stop the TorchServe that torchserve/start.sh started (same TS_STATE_DIR, default
# var/torchserve): SIGTERM to its whole process group, SIGKILL after 30 s. Safe to run
# when nothing is running.
#
#   torchserve/stop.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$repo/.venv/bin/python}"
cd "$repo"
exec "$python" -m torchserve.server stop --state-dir "${TS_STATE_DIR:-var/torchserve}"
