"""A stand-in service for testing the load-test CLI: real HTTP on loopback, known costs.

    python -m tests.support.busy_server CPU_MS [RETRY_AFTER_S]

Each POST /animate burns CPU_MS of CPU, then answers 200, except every request whose
number is not a multiple of 3, which is refused at once with 503 and `Retry-After:
RETRY_AFTER_S` (default 1). GET /health answers at once; GET /stats returns what was
received. Prints its port on the first line of stdout.
"""

import hashlib
import sys
import threading
import time
from http.server import ThreadingHTTPServer

from tests.support.http import JSONHandler


class Handler(JSONHandler):
    posts = 0
    bodies: set = set()
    refused = 0
    lock = threading.Lock()
    cpu_s = 0.0
    retry_after_s = "1"

    def do_GET(self) -> None:
        if self.path == "/stats":
            cls = type(self)
            self.reply_json(
                200, {"posts": cls.posts, "unique": len(cls.bodies), "refused": cls.refused}
            )
        else:
            self.reply_json(200, {"status": "ok"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        cls = type(self)
        with cls.lock:
            number = cls.posts
            cls.posts += 1
            cls.bodies.add(hashlib.sha256(body).hexdigest())
            refuse = number % 3 != 0
            cls.refused += refuse
        if refuse:
            self.reply_json(
                503, {"error": {"code": "overloaded"}}, {"Retry-After": cls.retry_after_s}
            )
            return
        end = time.thread_time() + cls.cpu_s
        while time.thread_time() < end:
            pass
        self.reply_json(200, {"dab": "http://example/dab.gif"})


if __name__ == "__main__":
    Handler.cpu_s = float(sys.argv[1]) / 1000
    if len(sys.argv) > 2:
        Handler.retry_after_s = sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
