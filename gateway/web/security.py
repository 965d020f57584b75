"""The API key of the POST routes, and security headers on every answer.

The optional keys: `Authorization: Bearer <one of API_KEY's keys>` (`matching_key`). The headers: a
strict Content-Security-Policy for the page and its files (scripts, styles and requests
from this origin only; images and videos also from `blob:`, `data:` and where the storage
hands out URLs), and `default-src 'none'` for the JSON, text and image answers, which a
browser never needs to run anything of.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlparse

from flask import Flask, Response, request

from gateway.config import Config

API_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
COMMON = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
}
# The page needs the phone's camera only through the file input, which asks no permission.


def matching_key(authorization: str, keys: tuple[str, ...]) -> str | None:
    """The key of `keys` the Authorization header carries as a bearer token, else None.
    Every key is compared, each in constant time: the answer's time tells nothing."""
    scheme, _, token = authorization.partition(" ")
    found = None
    for key in keys:
        if hmac.compare_digest(token.encode(), key.encode()) and scheme.lower() == "bearer":
            found = key
    return found


def _origin(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}"


def storage_sources(config: Config) -> list[str]:
    """Where the animations' URLs point: the gateway itself (file://), PUBLIC_BASE_URL's
    origin, the S3 endpoint's, or AWS's S3 hosts (presigned URLs)."""
    if config.public_base_url:
        return ["'self'", _origin(config.public_base_url)]
    if config.storage_url.startswith("file://"):
        return ["'self'"]
    if config.s3_endpoint_url:
        return [_origin(config.s3_endpoint_url)]
    return ["https://*.amazonaws.com"]


def page_policy(config: Config) -> str:
    media = " ".join(dict.fromkeys(["'self'", "blob:", "data:", *storage_sources(config)]))
    return "; ".join([
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        f"img-src {media}",
        f"media-src {media}",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ])  # fmt: skip


def register_security_headers(app: Flask, config: Config) -> None:
    policy = page_policy(config)

    @app.after_request
    def security_headers(response: Response) -> Response:
        page = request.endpoint in ("page.page", "static")
        response.headers.setdefault("Content-Security-Policy", policy if page else API_POLICY)
        for name, value in COMMON.items():
            response.headers.setdefault(name, value)
        return response
