"""The gateway's gunicorn worker: gunicorn's gevent worker, plus refusing a full house
before the request reaches Flask (`worker_class` in gunicorn.conf.py).

While every render slot and the queue are taken, a new connection's first bytes are
peeked at (not read): a POST to a route that renders, whose request line and headers came
in whole, is answered 503 by the `Shedder` (gateway/shedding.py) and the connection is
closed, before gunicorn parses anything or Flask sees it. Anything else, and every request
when there is room, goes the usual way; a request on a kept-alive connection is checked
again once gunicorn has parsed its headers. Refusals do not count towards gunicorn's
`max_requests`.

Cost of a refusal to the hub, measured on the 2-core machine (docs/BENCHMARKS.md, sections
overload and refusal-path): 0.8-1.0 ms of CPU through Flask, 0.22 ms after gunicorn's
parser, 0.15 ms from the peeked bytes (0.18-0.20 ms with a greenlet asleep for the
refusal's hold), 0.11-0.14 ms since held refusals are answered together
(`Shedder._release`).
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

import gevent
from gunicorn.workers.ggevent import GeventWorker

from gateway.arrival import ANCILLARY_SIZE, arrival, stamp

if TYPE_CHECKING:
    from gateway.shedding import Shedder

HEAD_PEEK_BYTES = 8192  # gunicorn's own limit on the request line


class GatewayWorker(GeventWorker):
    shedder: Shedder | None = None

    def load_wsgi(self) -> None:
        # gunicorn imports this module in the master, before gevent patches the worker:
        # the app's modules (boto3, ssl) are imported here, in the patched worker, only.
        from gateway.shedding import Shedder

        super().load_wsgi()
        self.shedder = Shedder.for_app(self.wsgi)
        # A refusal's hold counts from the request's arrival, not from when the event loop
        # got round to it: under load the loop waits for a core, and that wait would
        # otherwise come on top of the hold.
        stamp(self.sockets)

    def run(self) -> None:
        try:
            super().run()
        finally:  # stopping: the refusals still held are answered now, not reset on exit
            if self.shedder is not None:
                self.shedder.flush()

    def handle(self, listener, client, addr) -> None:
        """A new connection, while no slot is free: refused from its peeked head when the
        house is full; else, if it renders, it claims a place (`Admission.claim`)."""
        if self.shedder is not None and not self.shedder.admission.slot_free:
            head, arrived = self._peek(client, HEAD_PEEK_BYTES)
            end = head.find(b"\r\n\r\n")
            request = self.shedder.parse_head(head[:end]) if end > 0 else None
            if request is not None and self.shedder.refuses(*request):
                method, path, headers = request
                try:
                    self.shedder.answer(client, path, headers, arrived)
                finally:
                    client.close()  # the body unread: the kernel resets the connection
                return
            if request is not None and self.shedder.guards(*request[:2]):
                self.shedder.admission.claim(client)  # released in handle_request
        super().handle(listener, client, addr)

    def _peek(self, client, size: int) -> tuple[bytes, float]:
        """Up to `size` bytes the client sent, left unread (b"" if nothing came in time),
        and when they reached this machine (`time.monotonic()` time; now when the kernel
        did not say)."""
        # A client that sends nothing is gunicorn's to time out, after this.
        with gevent.Timeout(self.cfg.keepalive or 5, False):
            try:
                data, ancillary, _, _ = client.recvmsg(size, ANCILLARY_SIZE, socket.MSG_PEEK)
                return data, arrival(ancillary)
            except OSError:
                pass
        return b"", time.monotonic()

    def handle_request(self, listener_name, req, sock, addr):
        """A request gunicorn parsed (a kept-alive connection's next one, or a head that
        did not come in whole): the same check."""
        if self.shedder is not None and self.shedder.admission.full_for(sock):
            headers = {name.lower(): value for name, value in req.headers}
            if self.shedder.refuses(req.method, req.path, headers, sock):
                self.shedder.answer(sock, req.path, headers)
                raise StopIteration  # gunicorn stops the connection here and closes it
        try:
            return super().handle_request(listener_name, req, sock, addr)
        finally:
            if self.shedder is not None:
                self.shedder.admission.release(sock)  # admitted, or done without a slot
