"""/v1/runs: browse the evaluation runs under the data directory (report, plots, settings).

Runs belong to the deployment, not to an API key: any valid key may read them, none may change them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import CallerDep, SettingsDep
from app.api.openapi import V1_ERRORS, error_responses
from app.services import eval_runs as service

router = APIRouter(
    prefix="/v1/runs", tags=["evaluation runs"], responses={**V1_ERRORS, **error_responses(404)}
)

# A run's files are only ever fetched by the UI's scripts; should one be opened directly, it
# runs nothing and is shown as what it is.
FILE_HEADERS = {"Content-Security-Policy": "default-src 'none'; sandbox", "X-Content-Type-Options": "nosniff"}


class RunFilePublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    size: int = Field(description="Bytes.")


class RunSummaryPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str = Field(examples=["table4-lastfm-20261130T101500Z"])
    experiment: str | None = Field(description="From config.json: table4, table5, rounds, ...")
    dataset: str | None
    finished: bool = Field(description="results.json is written (an interrupted run has rows only).")
    modified_at: datetime = Field(description="When the newest file of the run was written.")
    plots: list[str] = Field(description="PNG files, fetched through .../files/{name}.")


class RunsPublic(BaseModel):
    data: list[RunSummaryPublic]
    count: int = Field(description="Runs in the runs directory (all pages).")


class RunPublic(RunSummaryPublic):
    config: dict[str, Any] | None = Field(description="config.json: the settings behind the numbers.")
    report: str | None = Field(description="report.md (markdown, with the paper's numbers where known).")
    code_version: str | None
    finished_at: str | None
    files: list[RunFilePublic]


@router.get("", response_model=RunsPublic)
async def list_runs(
    settings: SettingsDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> RunsPublic:
    """Run directories under the data directory's runs/, newest first."""
    runs, count = await service.list_eval_runs(settings, limit=limit, offset=offset)
    return RunsPublic(data=[RunSummaryPublic.model_validate(r) for r in runs], count=count)


@router.get("/{name}", response_model=RunPublic)
async def get_run(name: str, settings: SettingsDep, caller: CallerDep) -> RunPublic:
    """One run: its report, settings, plots and files."""
    run = await service.get_eval_run(settings, name)
    return RunPublic(
        **RunSummaryPublic.model_validate(run.summary).model_dump(),
        config=run.config,
        report=run.report,
        code_version=run.code_version,
        finished_at=run.finished_at,
        files=[RunFilePublic.model_validate(f) for f in run.files],
    )


@router.get(
    "/{name}/files/{file_name}",
    response_class=FileResponse,
    responses={
        200: {
            "content": {
                "image/png": {},
                "image/svg+xml": {},
                "text/markdown": {},
                "application/json": {},
            }
        }
    },
)
async def get_run_file(name: str, file_name: str, settings: SettingsDep, caller: CallerDep) -> FileResponse:
    """A plot (PNG or SVG), report.md, config.json or results.json of a run."""
    path, media_type = service.eval_run_file(settings, name, file_name)
    return FileResponse(path, media_type=media_type, headers=FILE_HEADERS)
