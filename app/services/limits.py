"""Per-key limits, shared by all workers through PostgreSQL: a request rate and a daily LLM-token budget.

- Rate: each authenticated /v1 request is counted in its key's current minute (fixed windows, one
  upsert on the lock pool, whose commits do not wait for a WAL flush: a crash may forget a few
  counts, never block a key). Past ``rate_limit_per_minute``: 429 with Retry-After (the rest of
  the minute).
- Budget: before an LLM request runs (a loop or feedback with LLM agents, a command for the LLM
  parser), the key's LLM tokens since midnight UTC are summed from the loop history and the
  steering commands. At or past
  ``llm_token_budget_per_day``: 429 saying the budget and when it resets. A run in progress counts
  when it is recorded, so concurrent runs of one key can overshoot by what they use.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

from app.db import limits as limits_repo
from app.db.database import Database
from app.services.errors import RateLimited
from app.services.keys import Caller
from app.settings import Settings

PURGE_SHARE = 0.01
"""Share of requests that also delete their key's windows older than an hour."""


async def count_request(database: Database, settings: Settings, caller: Caller) -> None:
    limit = settings.rate_limit_per_minute
    if not limit:
        return
    async with database.locks.pool.connection() as conn:
        count, left_s = await limits_repo.count_request(
            conn, owner_key_id=caller.key_id, purge=random.random() < PURGE_SHARE
        )
    if count > limit:
        retry = max(1, math.ceil(left_s))
        raise RateLimited(
            f"rate limit of {limit} requests per minute for this API key reached; retry in {retry} s",
            retry_after_s=retry,
        )


async def check_llm_budget(database: Database, settings: Settings, caller: Caller) -> None:
    budget = settings.llm_token_budget_per_day
    if not budget:
        return
    now = datetime.now(UTC)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    reset = day + timedelta(days=1)
    async with database.sessionmaker() as db:
        used = await limits_repo.llm_tokens_since(db, owner_key_id=caller.key_id, since=day)
    if used >= budget:
        raise RateLimited(
            f"daily LLM-token budget of {budget} tokens for this API key is used up ({used} used "
            f"since {day:%Y-%m-%d} 00:00 UTC); it resets at {reset:%Y-%m-%dT%H:%M:%SZ}. Offline agents "
            "still answer.",
            retry_after_s=max(1, math.ceil((reset - now).total_seconds())),
        )
