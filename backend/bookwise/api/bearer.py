"""``Authorization: Bearer <token>``, checked the one way both protected routes need it."""

from __future__ import annotations

import hmac


def bearer_matches(header: bytes, token: bytes) -> bool:
    """Whether the raw ``Authorization`` header (bytes as sent) carries ``token``. Constant time: how
    much of a guess matched must not show in how long the refusal took."""
    scheme, _, value = header.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), token)
