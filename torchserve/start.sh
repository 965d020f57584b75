#!/usr/bin/env bash
# Start TorchServe with the drawing models; return once each has a READY worker. The
# segmenter is optional: with a model store that has no archive for it (AnimatedDrawings'
# archives) the other two are served and the gateway segments with OpenCV.
#
#   torchserve/start.sh     # serves 127.0.0.1:8080 (inference), :8081 (management), :8082 (metrics)
#   torchserve/stop.sh      # stops it, Java frontend and Python workers included
#
# Runs in the background (its own process group, so Ctrl-C in the calling terminal does not
# reach it: stop it with stop.sh). Exits 0 when ready; otherwise non-zero with the end of
# the logs. Needs the archives (`make models`) and .venv (`make venv`).
#
# Environment (all optional):
#   TS_CONFIG         config file            (default torchserve/config.properties)
#   TS_MODEL_STORE    folder of .mar files   (default torchserve/model-store)
#   TS_STATE_DIR      this instance's TEMP (pid file, worker sockets) and logs
#                     (default var/torchserve); stop.sh must get the same value
#   TS_READY_TIMEOUT  seconds to wait for READY workers (default 180)
# OMP_NUM_THREADS=1 and TEMP=$TS_STATE_DIR/tmp are set for TorchServe by torchserve/server.py.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$repo/.venv/bin/python}"
cd "$repo"
exec "$python" -m torchserve.server start \
    --config "${TS_CONFIG:-torchserve/config.properties}" \
    --model-store "${TS_MODEL_STORE:-torchserve/model-store}" \
    --state-dir "${TS_STATE_DIR:-var/torchserve}" \
    --timeout "${TS_READY_TIMEOUT:-180}"
