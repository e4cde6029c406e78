"""Idempotent retries: a POST sent with an ``Idempotency-Key`` does its work at most once per key and owner.

The guarantee (docs/deploy.md, "Retries"):

- The first request with a key runs while holding an advisory lock named after the key (any
  worker). Every keyed request that stores something writes the key's row *in the transaction
  of its work*, naming what it produced: a loop (recommendations, feedback, a protocol run), a
  new session or thread, a consumption, a steering command. The answer is added once it has
  been sent. So the outcome of a keyed request is known even when its answer was lost (a 503
  after the commit, a dropped connection, a dead worker).
- A retry with the same key and request (method, path, body, streamed or not) then gets the
  stored answer again (``Idempotent-Replayed: true``) and runs nothing. If only the work was
  stored, the answer is rebuilt from it: the loop as its run recorded it (noted on the key in
  the record's transaction, so a paused loop judged since still answers as it did; an event
  stream replays as its ``result`` event alone), a command from its row, a session as it is now.
- A retry while the first still runs gets 409 with ``Retry-After``: while the key's lock is
  held, and while the loop it started is still ``running`` (its worker may have lost the lock
  in a database restart and still finish the loop; a dead worker's loop is resumed from its last
  checkpoint within seconds, app/services/resume.py, and its retry then replays it).
- A loop that failed produced nothing durable: a retry runs it again (a new loop number). A
  request that answered an error before any work (4xx, 503 before the commit) stored nothing
  and may be retried with the same key.
- The same key with another request gets 422. Keys are kept ``Settings.idempotency_ttl_s``;
  expired ones are ignored at once and deleted by `recloop db prune`.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import idempotency as repo
from app.db import loops as loops_repo
from app.db.database import Database
from app.services.claim import Claim
from app.services.errors import InvalidInput, KeyInFlight
from app.services.keys import Caller
from app.settings import Settings

HEADER = "Idempotency-Key"
KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"
"""1-255 visible ASCII characters (a UUID is a good key)."""
_KEY = re.compile(KEY_PATTERN)


@dataclass(frozen=True)
class StoredAnswer:
    status_code: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class Produced:
    """What a keyed request durably produced, its answer not stored: a session, or its loop."""

    session_id: uuid.UUID
    loop_index: int | None
    command_id: int | None = None
    loop_outcome: dict[str, Any] | None = None
    """The loop as the request's run recorded it (None: rebuilt from the loop history)."""


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


def _in_flight(settings: Settings) -> KeyInFlight:
    return KeyInFlight(
        f"a request with this {HEADER} is still running; retry when it has finished",
        field=HEADER,
        retry_after_s=settings.db_retry_after_s,
    )


@asynccontextmanager
async def claim(
    database: Database, settings: Settings, caller: Caller, key: str, request_fingerprint: str
) -> AsyncIterator[StoredAnswer | Produced | Claim]:
    """Hold the key; yield its stored answer to replay, what it produced (rebuild the answer from
    it), or the claim: run the request inside (its work links the key with the claim), then
    :func:`remember`."""
    async with database.locks.hold(f"idempotency:{caller.key_id}:{key}", busy=_in_flight(settings)):
        async with database.sessionmaker() as db:
            stored = await repo.get_live(db, owner_key_id=caller.key_id, key=key)
            loop = None
            if stored is not None and stored.body is None and stored.loop_index is not None:
                loop = await loops_repo.loop_status(
                    db, session_id=stored.session_id, loop_index=stored.loop_index
                )
        if stored is not None and stored.fingerprint != request_fingerprint:
            hours = settings.idempotency_ttl_s / 3600
            raise InvalidInput(
                f"{HEADER} {key!r} was used for a different request (method, path or body) within "
                f"{hours:g} h: use a new key for a new request",
                field=HEADER,
            )
        if stored is None or (stored.body is None and stored.session_id is None):
            found: StoredAnswer | Produced | None = None
        elif stored.body is not None:
            found = StoredAnswer(stored.status_code or 200, stored.content_type or "", stored.body)
        elif stored.loop_index is None:
            found = Produced(stored.session_id, None, stored.command_id)
        elif loop == "running":
            raise _in_flight(settings)
        elif loop in ("completed", "awaiting_feedback"):
            found = Produced(stored.session_id, stored.loop_index, loop_outcome=stored.loop_outcome)
        else:
            found = None  # the loop failed (or its session is gone): nothing was done, run it again
        if found is not None:
            yield found
            return
        yield Claim(caller.key_id, key, request_fingerprint, settings.idempotency_ttl_s)


async def link(
    db: AsyncSession,
    current: Claim | None,
    *,
    session_id: uuid.UUID,
    loop_index: int | None = None,
    command_id: int | None = None,
) -> None:
    """In the transaction of a keyed request's work: its key (``current``) now stands for this
    session (and loop, or steering command).

    Nothing when the request carries no key."""
    if current is None:
        return
    await repo.link(
        db,
        owner_key_id=current.owner_key_id,
        key=current.key,
        fingerprint=current.fingerprint,
        session_id=session_id,
        loop_index=loop_index,
        command_id=command_id,
        ttl_s=current.ttl_s,
    )


async def note_loop_outcome(db: AsyncSession, current: Claim | None, outcome: dict[str, Any]) -> None:
    """In the transaction that records the loop of a keyed request (``current``): the loop as
    recorded, from which a retry's answer is rebuilt if the first answer could not be stored.
    Nothing when the request carries no key."""
    if current is not None:
        await repo.note_loop_outcome(db, owner_key_id=current.owner_key_id, key=current.key, outcome=outcome)


async def remember(
    database: Database,
    settings: Settings,
    caller: Caller,
    key: str,
    request_fingerprint: str,
    answer: StoredAnswer,
) -> None:
    """Store a 2xx answer for replay (inside :func:`claim`, so no other request has the key)."""
    async with database.sessionmaker.begin() as db:
        await repo.put(
            db,
            owner_key_id=caller.key_id,
            key=key,
            fingerprint=request_fingerprint,
            status_code=answer.status_code,
            content_type=answer.content_type,
            body=answer.body,
            ttl_s=settings.idempotency_ttl_s,
        )
