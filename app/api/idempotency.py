"""``Idempotency-Key`` on the POSTs that create or run something (see app/services/idempotency.py).

A plain ASGI middleware: it needs the whole request body to compare retries, and the whole
answer (JSON, or every event of a stream) to replay it.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Annotated

from fastapi import Header
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.deps import CLAIM_STATE, bearer
from app.api.errors import database_down_response, service_error_response
from app.api.protocol_public import final_values, thread_public
from app.api.request_body import read_body, receive_again
from app.api.schemas import CommandResultPublic, RecommendationPublic, SessionPublic
from app.db.database import Database
from app.services import idempotency as service
from app.services import loop_record, protocol_runs
from app.services import protocol as protocol_service
from app.services import sessions as sessions_service
from app.services import steering as steering_service
from app.services.claim import Claim
from app.services.errors import DATABASE_DOWN, ServiceError, Unauthorized
from app.services.keys import Caller, authenticate
from app.services.runtime import Worker
from app.services.service_runner import ServiceRunner
from app.settings import Settings

_log = logging.getLogger(__name__)
IDEMPOTENT_POSTS = re.compile(r"/v1/sessions(/[^/]+/(recommendations|feedback|consumed|commands))?")
# LangGraph's protocol: creating a thread, and a run of any kind (app/api/threads.py, thread_runs.py).
PROTOCOL_POSTS = re.compile(r"/threads(/[^/]+/runs(/wait|/stream)?)?")


async def idempotency_key(
    key: Annotated[
        str | None,
        Header(
            alias=service.HEADER,
            pattern=service.KEY_PATTERN,
            description="Any unique string (a UUID): a retry with the same key and body gets the first "
            "answer again without running anything, also when that answer was lost (e.g. a 503 after "
            "the loop was recorded); a retry while the first (or its loop) runs gets 409 with "
            "Retry-After; a failed loop runs again; the same key with another body gets 422. Kept 24 h "
            "per API key.",
        ),
    ] = None,
) -> None:
    """Documents the header on the routes that take it; the middleware below does the work."""


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope) if scope["type"] == "http" else None
        if (
            headers is None
            or scope["method"] != "POST"
            or service.HEADER.lower() not in headers
            or not (IDEMPOTENT_POSTS.fullmatch(scope["path"]) or PROTOCOL_POSTS.fullmatch(scope["path"]))
        ):
            await self.app(scope, receive, send)
            return
        worker = scope["app"].state.worker
        database, settings = worker.database, worker.settings
        key = headers[service.HEADER]
        retry = settings.db_retry_after_s
        try:
            service.check_key(key)
            caller = await authenticate(
                database.sessionmaker,
                bearer(headers.get("authorization"), headers.get("x-api-key")),
                cache=worker.verified_keys,
            )
            body = await read_body(receive)  # a body over the limit raises (app/api/body_limit.py)
        except Unauthorized:
            await self.app(scope, receive, send)  # the app answers 401 as for any request
            return
        except ServiceError as exc:
            await service_error_response(exc, retry)(scope, receive, send)
            return
        except DATABASE_DOWN as exc:  # authenticating needed the database
            database.outage.saw(exc)
            await database_down_response(exc, retry)(scope, receive, send)
            return
        streamed = "text/event-stream" in headers.get("accept", "")
        request = service.fingerprint(scope["method"], scope["path"], body, streamed=streamed)
        answer = _Capture(send)
        try:
            async with service.claim(database, settings, caller, key, request) as found:
                if isinstance(found, Claim):  # run it: the route's caller holds the claim
                    scope.setdefault("state", {})[CLAIM_STATE] = found
                else:
                    stored = found
                    if isinstance(found, service.Produced):  # its answer was lost: rebuilt from the work
                        stored = await _rebuild(worker, caller, found, scope["path"], streamed=streamed)
                        await _remember(database, settings, caller, key, request, stored)
                    await _replay(stored, send)
                    return
                await self.app(scope, receive_again(body, receive), answer.send)
                if answer.status is not None and 200 <= answer.status < 300:
                    await _remember(database, settings, caller, key, request, answer.stored())
        except ServiceError as exc:
            if answer.status is None:
                await service_error_response(exc, retry)(scope, receive, send)
                return
            raise
        except DATABASE_DOWN as exc:
            database.outage.saw(exc)
            if answer.status is None:
                await database_down_response(exc, retry)(scope, receive, send)
                return
            raise


async def _remember(
    database: Database,
    settings: Settings,
    caller: Caller,
    key: str,
    request: str,
    answer: service.StoredAnswer,
) -> None:
    """Store the answer for replay; if the database is gone, the key's row (written with the work,
    when there was work) still tells a retry what the request produced."""
    try:
        await service.remember(database, settings, caller, key, request, answer)
    except DATABASE_DOWN as exc:
        _log.warning("the answer to Idempotency-Key %r was sent but could not be stored: %s", key, exc)


async def _rebuild(
    worker: Worker, caller: Caller, produced: service.Produced, path: str, *, streamed: bool
) -> service.StoredAnswer:
    """The answer of a keyed request from what it stored: its loop or command, or its session as
    it is now; on the protocol routes, LangGraph's shapes of the same."""
    database = worker.database
    if PROTOCOL_POSTS.fullmatch(path):
        return await _rebuild_protocol(database, worker.runner, caller, produced, path)
    if produced.command_id is not None:
        row = await steering_service.recorded_command(database, produced.command_id)
        status = steering_service.steering_parser_details(worker.settings)
        body = CommandResultPublic.from_row(row, worker.catalog, status).model_dump_json().encode()
        return service.StoredAnswer(200, "application/json", body)
    if produced.loop_index is not None:
        if produced.loop_outcome is not None:  # the loop as the request's run recorded it
            outcome = loop_record.outcome_from_json(
                produced.session_id, produced.loop_index, produced.loop_outcome
            )
        else:  # recorded before revision 0011
            outcome = await loop_record.recorded_outcome(
                database, worker.runner, produced.session_id, produced.loop_index
            )
        body = RecommendationPublic.from_outcome(outcome, worker.catalog).model_dump_json().encode()
        if streamed:  # the stream's result event alone: its update events were not stored
            return service.StoredAnswer(200, _EVENT_STREAM, _event(b"result", body))
        return _json(body)
    session = await sessions_service.get_session(database, caller, produced.session_id)
    body = SessionPublic.model_validate(session).model_dump_json().encode()
    return _json(body, 201 if path == "/v1/sessions" else 200)


async def _rebuild_protocol(
    database: Database, runner: ServiceRunner, caller: Caller, produced: service.Produced, path: str
) -> service.StoredAnswer:
    """A thread as it is now; a run as recorded; a wait's or stream's final state (a stream
    replays as its ``metadata`` event and one ``values`` event: its other events were not stored)."""
    session = await sessions_service.get_session(database, caller, produced.session_id)
    if produced.loop_index is None:
        return _json(json.dumps(thread_public(session)).encode())
    run_id = protocol_runs.run_id_for(session.id, produced.loop_index)
    if path.endswith("/runs"):
        run = await protocol_runs.get_run(database, caller, session.thread_id, run_id)
        return _json(json.dumps(run).encode())
    final = json.dumps(final_values(await protocol_service.thread_state(runner, session))).encode()
    if not path.endswith("/stream"):
        return _json(final)
    metadata = json.dumps({"run_id": run_id, "attempt": 1}).encode()
    return service.StoredAnswer(200, _EVENT_STREAM, _event(b"metadata", metadata) + _event(b"values", final))


def _json(body: bytes, status_code: int = 200) -> service.StoredAnswer:
    return service.StoredAnswer(status_code, "application/json", body)


_EVENT_STREAM = "text/event-stream; charset=utf-8"


def _event(name: bytes, data: bytes) -> bytes:
    return b"event: " + name + b"\r\ndata: " + data + b"\r\n\r\n"


class _Capture:
    """Passes the app's answer on and keeps a copy (the whole stream, for an event stream)."""

    def __init__(self, send: Send):
        self._send = send
        self.status: int | None = None
        self.content_type = "application/json"
        self.chunks: list[bytes] = []

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.content_type = Headers(raw=message.get("headers", [])).get("content-type", self.content_type)
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
        await self._send(message)

    def stored(self) -> service.StoredAnswer:
        assert self.status is not None
        return service.StoredAnswer(self.status, self.content_type, b"".join(self.chunks))


async def _replay(stored: service.StoredAnswer, send: Send) -> None:
    headers = [
        (b"content-type", stored.content_type.encode()),
        (b"content-length", str(len(stored.body)).encode()),
        (b"idempotent-replayed", b"true"),
    ]
    await send({"type": "http.response.start", "status": stored.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": stored.body, "more_body": False})
