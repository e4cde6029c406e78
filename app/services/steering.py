"""Natural-language steering of a session: commands, the preference memory, and what the loop uses.

A command is parsed against the session's memory and the items on screen, consolidated into
the memory, and stored (text, parse, new memory, new recommendations) in ``steering_commands``;
the newest row *is* the memory. The loop then works on :func:`loop_candidates`, and both
agents see the memory through the graph input's ``preferences``.

Parsing (possibly an LLM call) and planning (model scoring) are blocking, so they run in a
worker thread; the session's advisory lock keeps a command from racing a running loop.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from app.db import loops as loops_repo
from app.db import steering as store
from app.db.database import Database
from app.db.models import Session, SteeringCommand, usage_columns
from app.services import idempotency, limits, metrics
from app.services.errors import Conflict, InvalidInput, Unavailable
from app.services.keys import Caller
from app.services.parser_status import parser_details
from app.services.sessions import get_session, locked_session
from app.services.steering_models import SteeringModels
from app.settings import Settings
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer
from steering.catalog_index import CatalogIndex
from steering.choice import ParserUnavailable, build_parser, learned_artifact, parser_kind
from steering.lookup import catalog_index
from steering.parsing import CommandParser
from steering.planner import Plan, PlanWeights, steer_plan
from steering.preferences import (
    Preferences,
    PreferenceUpdate,
    as_preferences,
    consolidate,
    describe,
    steered,
)
from steering.similarity import Similarity, embedding_cache_path, load_similarity
from steering.tools import attribute_index, filter_candidates

_log = logging.getLogger(__name__)


class PreferencesUnsatisfiable(Conflict):
    """The session's hard constraints exclude every unseen item: a loop has nothing to propose."""


async def send_command(
    database: Database, models: SteeringModels, caller: Caller, session_id: uuid.UUID, *, text: str
) -> SteeringCommand:
    """Parse ``text``, update the session's memory, store both; the stored command (its parse, the
    memory after it and the steered recommendations)."""
    text = _check_text(text, models.settings)
    parser = await asyncio.to_thread(session_parser, models)  # the first call builds the catalog's index
    if parser.name == "llm":  # the command goes to the LLM
        await limits.check_llm_budget(database, models.settings, caller)
    async with locked_session(database, caller, session_id) as session:
        memory = await _memory(database, session.id)
        shown = await _current_recommendations(database, session.id)
        history = list(session.history)
        parse = await parser.parse(text, memory=memory, recommendations=shown or history[-10:])
        preferences = consolidate(memory, parse.update)
        recommendations = await asyncio.to_thread(_plan, models, preferences, history)
        async with database.sessionmaker.begin() as db:
            row = await store.add_command(
                db,
                session_id=session.id,
                kind="command",
                text=text,
                parser=parse.parser,
                understood=parse.understood,
                fallback=parse.fallback,
                unparsed=parse.unparsed,
                parsed=parse.update.model_dump(mode="json"),
                preferences=preferences.model_dump(mode="json"),
                recommendations=recommendations,
                fallback_cause=parse.fallback_cause,
                **usage_columns(parse.usage),
            )
            await loops_repo.add_key_usage(
                db, owner_key_id=session.owner_key_id, usage=parse.usage, fallbacks=int(parse.fallback)
            )
            # A keyed retry finds this command (its answer rebuilt from the row), never applies it again.
            await idempotency.link(db, caller.claim, session_id=session.id, command_id=row.id)
    metrics.observe_llm("parser", parse.usage, parse.fallback, parse.fallback_cause)
    return row


async def read_reason(
    database: Database, models: SteeringModels, session: Session, reason: str
) -> dict[str, Any] | None:
    """A human judge's reject reason read by the session's command parser ({update, parser, unparsed}),
    for the loop to honour: the rest of *this loop* avoids what it names (the session's memory is
    the user's commands alone). None when the parser is unavailable or the reason is too long to read.
    """
    if len(reason) > models.settings.steering_max_command_chars:
        return None
    try:
        parser = await asyncio.to_thread(session_parser, models)
    except Unavailable:
        _log.warning("no steering parser for a judge's reason", exc_info=True)
        return None
    parser = parser.without_calls()  # a reason is not worth an LLM call the key did not ask for
    memory = await _memory(database, session.id)
    parse = await parser.parse(reason, memory=memory, recommendations=[])
    return {
        "update": parse.update.model_dump(mode="json"),
        "parser": parse.parser,
        "unparsed": parse.unparsed,
    }


async def get_preferences(database: Database, caller: Caller, session_id: uuid.UUID) -> Preferences:
    session = await get_session(database, caller, session_id)
    return await _memory(database, session.id)


async def reset_preferences(
    database: Database, models: SteeringModels, caller: Caller, session_id: uuid.UUID
) -> Preferences:
    """Forget the memory; recorded as a ``reset`` row, so the history shows when it happened."""
    async with locked_session(database, caller, session_id) as session:
        recommendations = await asyncio.to_thread(_plan, models, Preferences(), list(session.history))
        async with database.sessionmaker.begin() as db:
            await store.add_command(
                db,
                session_id=session.id,
                kind="reset",
                text=None,
                parser=None,
                understood=True,
                fallback=False,
                unparsed=[],
                parsed=PreferenceUpdate(reset=True).model_dump(mode="json"),
                preferences=Preferences().model_dump(mode="json"),
                recommendations=recommendations,
            )
    return Preferences()


async def recorded_command(database: Database, command_id: int) -> SteeringCommand:
    """A stored command, to answer a keyed retry whose first answer was lost."""
    async with database.sessionmaker() as db:
        row = await db.get(SteeringCommand, command_id)
    if row is None:  # the key's row cascades with its command: a linked key names a stored one
        raise RuntimeError(f"steering command {command_id} is not stored")
    return row


async def command_history(
    database: Database, caller: Caller, session_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[SteeringCommand], int]:
    session = await get_session(database, caller, session_id)
    async with database.sessionmaker() as db:
        return await store.list_commands(db, session_id=session.id, limit=limit, offset=offset)


# --- what the feedback loop calls (the session is already looked up and locked) ---------------


def loop_preferences(stored: dict[str, Any] | None) -> Preferences | None:
    """The memory the loop shows both agents (None when the user never steered), from the memory
    as stored, read with the session (app/services/sessions.py ``locked_session_with_memory``)."""
    return steered(stored)


async def loop_candidates(
    models: SteeringModels,
    preferences: Preferences | None,
    history: Sequence[int],
    candidates: Sequence[int] | None = None,
) -> list[int] | None:
    """The candidate list under the memory: the steered top-n, or the caller's list without
    violating items. None means "no steering: use the default candidates".

    Raises InvalidInput (422, field candidates) when every given candidate violates the memory,
    and PreferencesUnsatisfiable (409) when no unseen catalog item satisfies it.
    """
    if preferences is None or preferences.is_empty():
        return None if candidates is None else list(candidates)
    if candidates is not None:
        kept = filter_candidates(candidates, preferences, models.catalog)
        if not kept:
            raise InvalidInput(
                f"candidates: every candidate violates the session's preferences ({describe(preferences)})",
                field="candidates",
            )
        return kept
    steered = await asyncio.to_thread(_plan, models, preferences, list(history))
    if not steered:
        raise PreferencesUnsatisfiable(
            f"no unseen item satisfies the session's preferences ({describe(preferences)}): "
            "change them with a command or DELETE .../preferences",
            field="preferences",
        )
    return steered


# --- helpers ----------------------------------------------------------------------------------


def _check_text(text: str, settings: Settings) -> str:
    stripped = text.strip()
    if not stripped:
        raise InvalidInput("text: the command is empty", field="text")
    if len(text) > settings.steering_max_command_chars:
        raise InvalidInput(
            f"text: {len(text)} characters, at most {settings.steering_max_command_chars} allowed",
            field="text",
        )
    return stripped


async def _memory(database: Database, session_id: uuid.UUID) -> Preferences:
    async with database.read() as db:
        row = await store.latest_command(db, session_id=session_id)
    stored = None if row is None else row.preferences
    return as_preferences(stored) or Preferences()  # None: never steered


async def _current_recommendations(database: Database, session_id: uuid.UUID) -> list[int]:
    async with database.sessionmaker() as db:
        row = await store.latest_command(db, session_id=session_id)
    return [] if row is None else list(row.recommendations)


def _plan(models: SteeringModels, preferences: Preferences, history: list[int]) -> list[int]:
    if preferences.is_empty():  # nothing to steer by: the rec model's top k (as steer_candidates)
        return _rec_scorer(models).top_k(history, models.settings.n_candidates)
    return steered_plan(models, preferences, history).items


def steered_plan(models: SteeringModels, preferences: Preferences, history: list[int]) -> Plan:
    """The plan of a non-empty memory, with the rec scorer, the similarity (only when a soft
    preference needs it) and the weights of the settings (bench.steer_commands hashes its scores)."""
    scorer = _rec_scorer(models)
    settings = models.settings
    weights = PlanWeights(settings.steering_semantic_weight, settings.steering_attenuation)
    similarity = (
        _similarity(models, scorer) if preferences.positive.soft or preferences.negative.soft else None
    )
    return steer_plan(
        preferences,
        history,
        scorer,
        models.catalog,
        settings.n_candidates,
        similarity=similarity,
        weights=weights,
    )


def _rec_scorer(models: SteeringModels) -> Scorer:
    if models.rec_scorer is None:
        raise Unavailable("models are not loaded yet")
    return models.rec_scorer


def steering_parser_details(settings: Settings) -> dict[str, Any]:
    """The parser reading commands now and the learned parser's state ("training", with when it is
    due): ``/readyz`` shows it and a command's answer repeats it."""
    return parser_details(settings, settings.dataset)


def session_parser(models: SteeringModels) -> CommandParser:
    """The configured command parser (RECLOOP_STEERING_PARSER), built once per setting and artifact.

    Raises Unavailable (503) when the configured parser cannot be built (no artifact, no endpoint).
    """
    config, catalog = models.settings.parser_config(), models.catalog
    kind = parser_kind(config, catalog.name)
    mtime = None
    if kind == "learned":  # a retrained artifact is picked up without a restart
        artifact = learned_artifact(config, catalog.name)
        mtime = artifact.stat().st_mtime_ns if artifact.is_file() else None
    key = (kind, config, mtime)
    with models.lock:  # one load of the encoder, however many commands arrive at once
        if key not in models.parsers:
            try:
                models.parsers[key] = build_parser(kind, _catalog_index(models), config, catalog.name)
            except ParserUnavailable as exc:
                raise Unavailable(str(exc), field="steering_parser") from exc
        return models.parsers[key]


def _catalog_index(models: SteeringModels) -> CatalogIndex:
    """The catalog's index from the steering look-up `recloop prepare` saved (built from the items,
    with a warning, when there is none); the caller holds ``models.lock``."""
    catalog = models.catalog
    if catalog.fingerprint not in models.indexes:
        models.indexes[catalog.fingerprint] = catalog_index(
            catalog, models.settings.data_dir, catalog.name, catalog.fingerprint
        )
    return models.indexes[catalog.fingerprint]


def _locked_catalog_index(models: SteeringModels) -> CatalogIndex:
    with models.lock:
        return _catalog_index(models)


def _similarity(models: SteeringModels, scorer: Scorer) -> Similarity:
    backend = models.settings.steering_similarity
    with models.similarity_lock:
        if (scorer, backend) not in models.similarities:
            catalog = models.catalog
            cache = embedding_cache_path(models.settings.data_dir, catalog.name, catalog.fingerprint)
            models.similarities[scorer, backend] = load_similarity(  # what prepare saved: never encodes
                catalog, scorer, backend=backend, cache_path=cache, prepared_only=True
            )
        return models.similarities[scorer, backend]


def _read_warm_up_command(parser: CommandParser, catalog: Dataset) -> None:
    """Parse (never with an LLM call, never stored) a command naming a genre, a title and a year."""
    genres = catalog.item_columns.genre_names
    title = next((catalog.title(i) for i in range(min(catalog.n_items, 100)) if catalog.title(i)), "")
    text = ", ".join(
        part
        for part in (
            f"no {genres[0]}" if genres else "",
            f"something like {title}" if title else "",
            "only things from after 1990",
        )
        if part
    )
    asyncio.run(parser.without_calls().parse(text, memory=Preferences(), recommendations=[]))


async def warm_up(models: SteeringModels) -> Similarity | None:
    """Load the soft-preference similarity (the text model: seconds), the steering look-up `recloop
    prepare` saved (the catalog's index and the hard filter's genre and year arrays: built here
    instead when it is missing, seconds at 10^5 items) and the command parser, and parse one
    command naming a genre, a title and a year (what the parser builds on first use is built now),
    before the first command needs them.

    Best effort: a failure is logged and the first command tries again and reports its own error.
    """
    try:
        await asyncio.to_thread(_locked_catalog_index, models)
    except Exception:
        _log.warning("steering look-up warm-up failed; the first command will build it", exc_info=True)
    await asyncio.to_thread(attribute_index, models.catalog)  # never raises: None means per-item rules
    try:
        parser = await asyncio.to_thread(session_parser, models)
        # The parser builds its catalog tables (titles, genres, years) when a command first names
        # one: 1.6-4.7 s each at 10^6 items. One command naming each builds them here instead.
        await asyncio.to_thread(_read_warm_up_command, parser, models.catalog)
    except Exception:
        _log.warning("steering parser warm-up failed; the first command will build it", exc_info=True)
    try:
        similarity = await asyncio.to_thread(_similarity, models, _rec_scorer(models))
    except Exception:
        _log.warning("steering warm-up failed; the first soft command will load it", exc_info=True)
        return None
    _log.info("steering similarity ready: %s", similarity.name)
    return similarity
