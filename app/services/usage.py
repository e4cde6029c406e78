"""LLM usage per API key: what each client's loops and steering commands cost, per UTC day."""

from __future__ import annotations

from datetime import date

from app.db import loops as loops_repo
from app.db.database import Database
from app.db.models import KeyUsage
from app.services.keys import Caller


async def key_usage(
    database: Database, caller: Caller, *, since: date | None, until: date | None
) -> list[KeyUsage]:
    """The caller's key's usage per day in [since, until] (both optional, UTC days; empty when
    since > until: a valid query the OpenAPI schema cannot forbid, with no day in it)."""
    async with database.sessionmaker() as db:
        return await loops_repo.key_usage(db, owner_key_id=caller.key_id, since=since, until=until)
