"""/v1/sessions/{id}/commands and /preferences: steer a session's recommendations in words."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import CallerDep, ResourcesDep
from app.api.openapi import IDEMPOTENT, V1_ERRORS, error_responses
from app.api.schemas import MAX_OFFSET, SOME_TEXT, ItemPublic, UsagePublic
from app.services import steering as service
from graph.steering.preferences import Preferences, PreferenceUpdate
from recmodels.dataset import Dataset

router = APIRouter(prefix="/v1/sessions", tags=["steering"], responses={**V1_ERRORS, **error_responses(404)})
CHANGES = error_responses(409)
"""Changing the session's memory waits for no running loop: 409 while one runs."""


class CommandCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"text": "more like Toy Story but not animated"}, {"text": "no horror"}]
        }
    )

    text: str = Field(
        min_length=1,
        pattern=SOME_TEXT,
        description="What the user wants, in their words (at most RECLOOP_STEERING_MAX_COMMAND_CHARS).",
    )


class CommandResultPublic(BaseModel):
    preferences: Preferences = Field(description="The session's preference memory after the command.")
    parsed: PreferenceUpdate = Field(description="What this command changed.")
    recommendations: list[ItemPublic] = Field(description="The candidate list the loop now works on.")
    understood: bool = Field(description="Every part of the command was understood.")
    unparsed: list[str] = Field(description="Parts not understood, and why (nothing was guessed).")
    parser: str = Field(description="Which parser read the command: offline, llm or learned.")
    fallback: bool = Field(description="The LLM parser failed and the offline parser answered.")
    fallback_cause: str | None = Field(None, description="Why the LLM parser's answer was not used.")
    usage: UsagePublic = Field(description="LLM calls and tokens of this parse (zeros offline).")


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


def _items(catalog: Dataset, ids: list[int]) -> list[ItemPublic]:
    return [ItemPublic(id=i, title=catalog.title(i), attributes=catalog.item(i).attributes) for i in ids]


@router.post(
    "/{session_id}/commands", response_model=CommandResultPublic, responses=CHANGES, dependencies=IDEMPOTENT
)
async def send_command(
    session_id: uuid.UUID, body: CommandCreate, res: ResourcesDep, caller: CallerDep
) -> CommandResultPublic:
    """Parse a command into the session's preferences; returns them and the new recommendations."""
    outcome = await service.send_command(res, caller, session_id, text=body.text)
    return CommandResultPublic(
        preferences=outcome.preferences,
        parsed=outcome.parse.update,
        recommendations=_items(res.catalog, outcome.recommendations),
        understood=outcome.parse.understood,
        unparsed=outcome.parse.unparsed,
        parser=outcome.parse.parser,
        fallback=outcome.parse.fallback,
        fallback_cause=outcome.parse.fallback_cause,
        usage=UsagePublic(**outcome.parse.usage),
    )


@router.get("/{session_id}/commands", response_model=CommandsPublic)
async def list_commands(
    session_id: uuid.UUID,
    res: ResourcesDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> CommandsPublic:
    """The session's commands and resets, oldest first, each with the memory it produced."""
    rows, count = await service.command_history(res, caller, session_id, limit=limit, offset=offset)
    return CommandsPublic(data=[CommandPublic.model_validate(r) for r in rows], count=count)


@router.get("/{session_id}/preferences", response_model=Preferences)
async def get_preferences(session_id: uuid.UUID, res: ResourcesDep, caller: CallerDep) -> Preferences:
    """The session's preference memory (empty when the user never steered)."""
    return await service.get_preferences(res, caller, session_id)


@router.delete(
    "/{session_id}/preferences", response_model=Preferences, status_code=status.HTTP_200_OK, responses=CHANGES
)
async def reset_preferences(session_id: uuid.UUID, res: ResourcesDep, caller: CallerDep) -> Preferences:
    """Forget the preference memory (the reset is kept in the command history)."""
    return await service.reset_preferences(res, caller, session_id)
