"""The optional API key of the POST routes: `Authorization: Bearer <API_KEY>`."""

from __future__ import annotations

import hmac


def bearer_matches(authorization: str, key: str) -> bool:
    """True when the Authorization header carries `key` as a bearer token (constant time)."""
    scheme, _, token = authorization.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.encode(), key.encode())
