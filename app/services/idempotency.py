"""Idempotent retries: a POST sent with an ``Idempotency-Key`` runs once per key and owner.

The first request with a key runs while holding an advisory lock named after the key (any
worker); its 2xx answer is stored in PostgreSQL for ``Settings.idempotency_ttl_s`` (24 h). A
retry with the same key and the same request gets that answer again without anything running; a
retry while the first still runs gets 409; the same key with another request (method, path,
body, or streamed vs JSON) gets 422. Answers other than 2xx are not stored: nothing was created
or run, and the client may retry with the same key. A worker that dies while running a keyed
request frees the lock with its connection; the loop it ran is recorded as failed, and a retry
runs again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from app.db import idempotency as repo
from app.services.errors import Conflict, InvalidInput
from app.services.keys import Caller
from app.services.runtime import ServiceResources

HEADER = "Idempotency-Key"
KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"
"""1-255 visible ASCII characters (a UUID is a good key)."""
_KEY = re.compile(KEY_PATTERN)


@dataclass(frozen=True)
class StoredAnswer:
    status_code: int
    content_type: str
    body: bytes


def check_key(key: str) -> None:
    if not _KEY.fullmatch(key):
        raise InvalidInput(f"{HEADER}: 1-255 visible ASCII characters (e.g. a UUID)", field=HEADER)


def fingerprint(method: str, path: str, body: bytes, *, streamed: bool) -> str:
    """The request a key stands for; JSON bodies compare by content (key order, spacing ignored)."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except ValueError:
        canonical = body
    digest = hashlib.sha256(f"{method}\0{path}\0{'stream' if streamed else 'json'}\0".encode())
    digest.update(canonical)
    return digest.hexdigest()


@asynccontextmanager
async def claim(
    res: ServiceResources, caller: Caller, key: str, request_fingerprint: str
) -> AsyncIterator[StoredAnswer | None]:
    """Hold the key; yield its stored answer to replay, or None: run the request, then :func:`remember`."""
    busy = Conflict(
        f"a request with this {HEADER} is still running; retry when it has finished", field=HEADER
    )
    async with res.locks.hold(f"idempotency:{caller.key_id}:{key}", busy=busy):
        async with res.sessionmaker() as db:
            stored = await repo.get_live(db, owner_key_id=caller.key_id, key=key)
        if stored is not None and stored.fingerprint != request_fingerprint:
            hours = res.settings.idempotency_ttl_s / 3600
            raise InvalidInput(
                f"{HEADER} {key!r} was used for a different request (method, path or body) within "
                f"{hours:g} h: use a new key for a new request",
                field=HEADER,
            )
        yield None if stored is None else StoredAnswer(stored.status_code, stored.content_type, stored.body)


async def remember(
    res: ServiceResources, caller: Caller, key: str, request_fingerprint: str, answer: StoredAnswer
) -> None:
    """Store a 2xx answer for replay (inside :func:`claim`, so no other request has the key)."""
    async with res.sessionmaker.begin() as db:
        await repo.put(
            db,
            owner_key_id=caller.key_id,
            key=key,
            fingerprint=request_fingerprint,
            status_code=answer.status_code,
            content_type=answer.content_type,
            body=answer.body,
            ttl_s=res.settings.idempotency_ttl_s,
        )
