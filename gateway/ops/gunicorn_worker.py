"""The gateway's gunicorn worker: gunicorn's gevent worker, plus refusing a full house
before the request reaches Flask (`worker_class` in gunicorn.conf.py).

While no render slot is free, a new connection's first bytes are peeked at (not read):
when its request line and headers came in whole, `Admission.at_head` (gateway/admission.py)
says whether it is refused - answered 503 by the `Shedder` and the connection closed,
before gunicorn parses anything or Flask sees it - or holds a place. Anything else, and
every request when there is room, goes the usual way; a request on a kept-alive connection
is checked again once gunicorn has parsed its headers. Refusals do not count towards
gunicorn's `max_requests`. Why at the head: a refusal there costs the event loop a fraction
of one through Flask (docs/BENCHMARKS.md, sections overload and refusal-path).

On SIGTERM the worker drains: requests in flight finish (up to `graceful_timeout`), and
connections that wait for their next request (kept alive, idle) are closed at once, as
nginx does; gunicorn's gevent worker would wait out their `keepalive` (5 s) first.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

import gevent
from gunicorn.workers.ggevent import GeventWorker

from gateway.ops.arrival import ANCILLARY_SIZE, arrival, stamp

if TYPE_CHECKING:
    from gateway.admission import Admission, Shedder

HEAD_PEEK_BYTES = 8192  # gunicorn's own limit on the request line


class GatewayWorker(GeventWorker):
    admission: Admission | None = None
    shedder: Shedder | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._waiting: set[socket.socket] = set()  # connections between two requests

    @staticmethod
    def shedder_for(app) -> Shedder:
        """The refusals' answerer of `app`'s admission, with its hold (REFUSAL_HOLD_S)."""
        # gunicorn imports this module in the master, before gevent patches the worker:
        # the app's modules (boto3, ssl) are imported here, in the patched worker, only.
        from gateway.admission import RefusalHold, Shedder
        from gateway.services import services_of

        services = services_of(app)
        return Shedder(services.admission, RefusalHold(services.config.refusal_hold_s))

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.shedder = self.shedder_for(self.wsgi)
        self.admission = self.shedder.admission
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
        house is full; else, if it renders, it claims a place (released in handle_request)."""
        if self.admission is not None and not self.admission.slot_free:
            head, arrived = self._peek(client, HEAD_PEEK_BYTES)
            end = head.find(b"\r\n\r\n")
            request = self.shedder.parse_head(head[:end]) if end > 0 else None
            if request is not None and self.admission.at_head(*request, client, claim=True):
                method, path, headers = request
                try:
                    self.shedder.answer(client, path, headers, arrived)
                finally:
                    client.close()  # the body unread: the kernel resets the connection
                return
        try:
            super().handle(listener, client, addr)
        finally:
            self._waiting.discard(client)

    def handle_exit(self, sig, frame) -> None:
        """SIGTERM: stop (gunicorn's drain), and close the connections that wait for a
        next request; in a greenlet of its own, out of the signal handler."""
        super().handle_exit(sig, frame)
        gevent.spawn(self._close_waiting)

    def _close_waiting(self) -> None:
        for client in list(self._waiting):
            _end(client)

    def _waits_for_a_request(self, client: socket.socket) -> None:
        """`client`, answered, now waits for its next request: ended at once if the worker
        stops. (A new connection that has not sent its first request yet is left to
        gunicorn: its request may be on its way.)"""
        if self.alive:
            self._waiting.add(client)
        else:  # SIGTERM came while its last answer was going out
            _end(client)

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
        self._waiting.discard(sock)
        if self.admission is not None and self.admission.full_for(sock):
            headers = {name.lower(): value for name, value in req.headers}
            if self.admission.at_head(req.method, req.path, headers, sock):
                self.shedder.answer(sock, req.path, headers)
                raise StopIteration  # gunicorn stops the connection here and closes it
        try:
            return super().handle_request(listener_name, req, sock, addr)
        finally:
            if self.admission is not None:
                self.admission.release(sock)  # admitted, or done without a slot
            self._waits_for_a_request(sock)  # kept alive


def _end(client: socket.socket) -> None:
    """End a connection from this side: its handler reads the end, and closes it."""
    try:
        client.shutdown(socket.SHUT_RDWR)
    except OSError:  # gone already
        pass
