#!/usr/bin/env bash
# `make run`: TorchServe and the gateway on this machine, until Ctrl-C (or SIGTERM).
#
# Starts TorchServe (torchserve/start.sh, 127.0.0.1:8080-8082) and gunicorn with the gevent
# worker (gateway/gunicorn.conf.py, 127.0.0.1:5000), files stored under var/animations and
# served by the gateway; waits for /ready and prints a curl line to try. On Ctrl-C or
# SIGTERM both are stopped and the script returns once nothing is left running.
# Every gateway setting can be overridden from the environment (see README, Configuration).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python="${PYTHON:-$repo/.venv/bin/python}"
export GUNICORN_BIND="${GUNICORN_BIND:-127.0.0.1:5000}"
export STORAGE_URL="${STORAGE_URL:-file://$repo/var/animations}"
export TS_STATE_DIR="${TS_STATE_DIR:-$repo/var/torchserve}"
url="http://${GUNICORN_BIND}"
gunicorn_pid=""
torchserve_started=""

# Stops only what this script started: a TorchServe or gateway found running belongs to
# someone else.
stop_all() {
    trap - INT TERM EXIT
    if [[ -n "$gunicorn_pid" ]] && kill -0 "$gunicorn_pid" 2>/dev/null; then
        echo "stopping the gateway..."
        kill -TERM "$gunicorn_pid" 2>/dev/null || true  # graceful: in-flight requests finish
        wait "$gunicorn_pid" 2>/dev/null || true
    fi
    if [[ -n "$torchserve_started" ]]; then
        echo "stopping TorchServe..."
        torchserve/stop.sh >/dev/null 2>&1 || true
    fi
    echo "stopped."
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if "$python" - "$GUNICORN_BIND" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
sys.exit(0 if socket.socket().connect_ex((host, int(port))) == 0 else 1)
PY
then
    echo "something already listens on $GUNICORN_BIND; stop it or set GUNICORN_BIND" >&2
    exit 1
fi

echo "starting TorchServe (models load in a few seconds)..."
# start.sh refuses to start over a running instance, and stops its own on a failed start.
torchserve/start.sh
torchserve_started=1

echo "starting the gateway on $url ..."
# Its own session: Ctrl-C reaches this script only, which then stops gunicorn gracefully.
setsid "$python" -m gunicorn -c gateway/gunicorn.conf.py &
gunicorn_pid=$!

"$python" - "$url" "$gunicorn_pid" <<'PY'
import json, os, sys, time, urllib.error, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the gateway exited during start-up (see its log above)")
    try:
        with urllib.request.urlopen(f"{url}/ready", timeout=3):
            sys.exit(0)
    except urllib.error.HTTPError as exc:
        last = json.load(exc).get("missing")
    except OSError as exc:
        last = str(exc)
    time.sleep(0.5)
sys.exit(f"the gateway did not become ready in 120 s: {last}")
PY

cat <<MSG

Ready: $url   (GIFs are stored in ${STORAGE_URL#file://})
Try it:

  curl -s -F image=@$repo/gateway/sample_drawing.jpg $url/animate

It answers {"dab": "$url/files/...gif", ...}; open the URLs in a browser.
Ctrl-C stops TorchServe and the gateway.
MSG

wait "$gunicorn_pid"
