"""/v1/sessions/{id}/commands and /preferences: steer a session's recommendations in words."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import CallerDep, DatabaseDep, SteeringDep
from app.api.openapi import IDEMPOTENT, V1_ERRORS, error_responses
from app.api.schemas import MAX_OFFSET, SOME_TEXT, CommandResultPublic, UsagePublic
from app.services import steering as service
from steering.preferences import Preferences, PreferenceUpdate

router = APIRouter(prefix="/v1/sessions", tags=["steering"], responses={**V1_ERRORS, **error_responses(404)})
CHANGES = error_responses(409)
"""Changing the session's memory waits for no running loop: 409 while one runs."""


class CommandCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"text": "more like Toy Story but not animated"}, {"text": "no horror"}]
        },
    )

    text: str = Field(
        min_length=1,
        pattern=SOME_TEXT,
        description="What the user wants, in their words (at most RECLOOP_STEERING_MAX_COMMAND_CHARS).",
    )


class CommandPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    kind: Literal["command", "reset"]
    text: str | None
    parser: str | None
    understood: bool
    fallback: bool
    fallback_cause: str | None = None
    usage: UsagePublic
    unparsed: list[str]
    parsed: PreferenceUpdate
    preferences: Preferences
    recommendations: list[int]
    created_at: datetime


class CommandsPublic(BaseModel):
    data: list[CommandPublic]
    count: int = Field(description="Commands of the session (all pages).")


@router.post(
    "/{session_id}/commands", response_model=CommandResultPublic, responses=CHANGES, dependencies=IDEMPOTENT
)
async def send_command(
    session_id: uuid.UUID, body: CommandCreate, database: DatabaseDep, models: SteeringDep, caller: CallerDep
) -> CommandResultPublic:
    """Parse a command into the session's preferences; returns them and the new recommendations."""
    command = await service.send_command(database, models, caller, session_id, text=body.text)
    # as a keyed retry rebuilds it
    return CommandResultPublic.from_row(
        command, models.catalog, service.steering_parser_details(models.settings)
    )


@router.get("/{session_id}/commands", response_model=CommandsPublic)
async def list_commands(
    session_id: uuid.UUID,
    database: DatabaseDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> CommandsPublic:
    """The session's commands and resets, oldest first, each with the memory it produced."""
    rows, count = await service.command_history(database, caller, session_id, limit=limit, offset=offset)
    return CommandsPublic(data=[CommandPublic.model_validate(r) for r in rows], count=count)


@router.get("/{session_id}/preferences", response_model=Preferences)
async def get_preferences(session_id: uuid.UUID, database: DatabaseDep, caller: CallerDep) -> Preferences:
    """The session's preference memory (empty when the user never steered)."""
    return await service.get_preferences(database, caller, session_id)


@router.delete(
    "/{session_id}/preferences", response_model=Preferences, status_code=status.HTTP_200_OK, responses=CHANGES
)
async def reset_preferences(
    session_id: uuid.UUID, database: DatabaseDep, models: SteeringDep, caller: CallerDep
) -> Preferences:
    """Forget the preference memory (the reset is kept in the command history)."""
    return await service.reset_preferences(database, models, caller, session_id)
