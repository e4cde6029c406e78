"""/v1/usage: the LLM usage of your API key, per UTC day (calls, tokens, time, fallbacks)."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import CallerDep, DatabaseDep
from app.api.openapi import V1_ERRORS
from app.api.schemas import DayUsagePublic, IsoDate, KeyUsagePublic, UsagePublic
from app.services import usage as service
from llm.usage import sum_usage

router = APIRouter(prefix="/v1/usage", tags=["usage"], responses=V1_ERRORS)


@router.get("", response_model=KeyUsagePublic)
async def key_usage(
    database: DatabaseDep, caller: CallerDep, since: IsoDate | None = None, until: IsoDate | None = None
) -> KeyUsagePublic:
    """LLM calls, tokens (prompt, completion, cached), time and fallbacks of all your sessions
    (deleted ones included), per UTC day from ``since`` to ``until`` (inclusive, both optional)."""
    rows = await service.key_usage(database, caller, since=since, until=until)
    days = [DayUsagePublic(day=r.day, usage=UsagePublic(**r.usage), fallbacks=r.fallbacks) for r in rows]
    return KeyUsagePublic(data=days, total=UsagePublic(**sum_usage(r.usage for r in rows)))
