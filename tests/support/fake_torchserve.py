"""A loopback HTTP server in TorchServe's place that answers slowly, or with an error.

Real sockets and real HTTP, so the gateway's client meets a slow or failing server exactly
as it would meet TorchServe in that state. The management API says every model is READY.
Lowering `delay_s` lets the answers already waiting go at once (a test's teardown does not
sit out the rest of a long delay).
"""

from __future__ import annotations

import threading
import time
from http.server import ThreadingHTTPServer

from tests.support.http import JSONHandler


class FakeTorchServe(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self._delay_s = 0.0
        self._delay_changed = threading.Condition()
        self.status = 200
        self.predictions = 0
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def delay_s(self) -> float:
        """Seconds each prediction waits before it answers."""
        return self._delay_s

    @delay_s.setter
    def delay_s(self, seconds: float) -> None:
        with self._delay_changed:
            self._delay_s = seconds
            self._delay_changed.notify_all()

    def wait_delay(self) -> None:
        """Wait out the delay from now, as it stands while waiting."""
        start = time.monotonic()
        with self._delay_changed:
            while (left := start + self._delay_s - time.monotonic()) > 0:
                self._delay_changed.wait(left)

    def __enter__(self) -> FakeTorchServe:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


class _Handler(JSONHandler):
    server: FakeTorchServe

    def do_GET(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        self.reply_json(200, [{"modelName": name, "workers": [{"id": "9000", "status": "READY"}]}])

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.predictions += 1
        self.server.wait_delay()
        if self.server.status != 200:
            self.reply_json(self.server.status, {"code": self.server.status, "message": "failed"})
        elif "detector" in self.path:
            self.reply_json(200, [{"bbox": [10, 10, 200, 300], "score": 0.9}])
        else:
            self.reply_json(200, [{"keypoints": [[100, 100, 0.9]] * 17}])
