"""A keyed request's claim on its Idempotency-Key (app/services/idempotency.py), held by its caller."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """A keyed request being served: its work links the key (``Caller.claim``, handed to the
    routes by the middleware, app/api/idempotency.py)."""

    owner_key_id: int
    key: str
    fingerprint: str
    ttl_s: int
