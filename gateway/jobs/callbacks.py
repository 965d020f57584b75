"""A job's callback: where it may go (no SSRF), how it is signed, how it is delivered.

Where: `https://` to a host whose every address is public; `http://`, or a private,
loopback or link-local address (a cloud's metadata service among them), only to a host the
operator allow-lists (CALLBACK_ALLOW_HOSTS: names, addresses or networks). Checked at
submission, after DNS resolution, and again before each delivery (DNS may answer otherwise
by then). No credentials in the URL; redirects are not followed.

Signed: `X-Signature-256: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with
CALLBACK_SECRET>` and `X-Signature-Timestamp: <unix seconds>`, so the receiver can check
the body came from this service, and refuse an old one replayed.

Delivered: POSTed as JSON (what GET /jobs/<id> answers), tried CALLBACK_TRIES times,
waiting CALLBACK_BACKOFF_S, then twice that, ... between tries, until a 2xx answer.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import gevent
import requests

from gateway.errors import CallbackRefused

log = logging.getLogger("gateway.jobs.callbacks")
SIGNATURE_HEADER = "X-Signature-256"
TIMESTAMP_HEADER = "X-Signature-Timestamp"
TIMEOUT_S = 10.0
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], set[Address]]


def resolve(host: str, port: int) -> set[Address]:
    """Every address `host` resolves to (IPv4-mapped IPv6 ones as IPv4)."""
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise CallbackRefused(f"callback_url's host {host!r} does not resolve: {exc}") from None
    found: set[Address] = set()
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        mapped = getattr(address, "ipv4_mapped", None)
        found.add(mapped or address)
    return found


def _allow_listed(host: str, addresses: set[Address], allow: tuple[str, ...]) -> bool:
    """The host's name is on the list, or each of its addresses is in a listed network."""
    if host.lower() in allow:
        return True
    networks = []
    for entry in allow:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            continue  # a host name
    return bool(addresses) and all(any(a in n for n in networks) for a in addresses)


def check_url(url: str, allow: tuple[str, ...], resolver: Resolver = resolve) -> None:
    """Raise CallbackRefused (400 invalid_callback) unless a callback may go to `url`."""
    if len(url) > 2048:
        raise CallbackRefused("callback_url is longer than 2048 characters")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise CallbackRefused("callback_url must be an https:// URL")
    if parts.username or parts.password:
        raise CallbackRefused("callback_url must not carry credentials")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise CallbackRefused("callback_url has a bad port") from None
    host = parts.hostname
    addresses = resolver(host, port)
    if _allow_listed(host, addresses, allow):
        return
    if parts.scheme != "https":
        raise CallbackRefused(
            f"callback_url must be https:// (http only to a host in CALLBACK_ALLOW_HOSTS; "
            f"{host!r} is not)"
        )
    private = sorted(str(a) for a in addresses if not a.is_global)
    if private:
        raise CallbackRefused(
            f"callback_url's host {host!r} resolves to a non-public address ({', '.join(private)}):"
            " loopback, private, link-local and metadata addresses are refused unless the "
            "operator allow-lists the host"
        )


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The X-Signature-256 value of `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def deliver(
    url: str, document: dict, *, secret: str, allow: tuple[str, ...], tries: int,
    backoff_s: float,
) -> bool:  # fmt: skip
    """POST `document` to `url`, signed, until a 2xx answer or `tries` tries; True if one came."""
    body = json.dumps(document).encode()
    for attempt in range(tries):
        if attempt:
            gevent.sleep(backoff_s * 2 ** (attempt - 1))
        try:
            check_url(url, allow)
            stamp = str(int(time.time()))
            answer = requests.post(
                url, data=body, timeout=TIMEOUT_S, allow_redirects=False,
                headers={"Content-Type": "application/json", TIMESTAMP_HEADER: stamp,
                         SIGNATURE_HEADER: signature(secret, stamp, body)},
            )  # fmt: skip
        except CallbackRefused as exc:
            log.warning("callback of job %s refused: %s", document.get("id"), exc.message)
            return False
        except requests.RequestException as exc:
            log.warning("callback of job %s, try %d: %s", document.get("id"), attempt + 1, exc)
            continue
        if 200 <= answer.status_code < 300:
            return True
        log.warning("callback of job %s, try %d: answered %d", document.get("id"), attempt + 1,
                    answer.status_code)  # fmt: skip
    return False
