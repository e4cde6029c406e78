"""Liveness, readiness and Prometheus metrics (unversioned, no API key)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text

from app.api.deps import DatabaseDep, RunnerDep, SettingsDep
from app.services.metrics import exposition
from app.services.steering import steering_parser_details

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "Database unreachable or models not loaded."}})
async def readyz(database: DatabaseDep, runner: RunnerDep, settings: SettingsDep) -> JSONResponse:
    """Ready to serve: the database answers and the models are loaded."""
    checks = {"database": "ok", "models": "ok" if runner.models_loaded else "not loaded"}
    try:
        async with database.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:  # any failure here means "not ready", whatever its kind
        checks["database"] = f"unreachable ({type(exc).__name__})"
    ready = all(v == "ok" for v in checks.values())
    headers = None if ready else {"Retry-After": str(settings.db_retry_after_s)}
    body: dict[str, object] = {"status": "ready" if ready else "not ready", "checks": checks}
    details: dict[str, object] = {"steering": steering_parser_details(settings)}
    llm = runner.loop_deps.get("llm")
    if llm is not None and llm.llm_weights is not None:  # fitted for this endpoint, or the default
        details |= {"llm_weights": llm.llm_weights.status, "llm_weights_fitted": llm.llm_weights.learned}
    body["details"] = details
    return JSONResponse(body, status_code=200 if ready else 503, headers=headers)


@router.get("/metrics", response_class=Response)
async def metrics() -> Response:
    """Prometheus text format: request latency, loops, rounds, LLM calls and tokens, fallbacks.

    Summed over all worker processes of a `recloop serve` with several workers."""
    return Response(exposition(), media_type=CONTENT_TYPE_LATEST)
