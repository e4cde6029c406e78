"""Typed sync and async clients of /v1: every call is described once (:class:`_Call`), then sent
by :class:`Client` (httpx.Client) or :class:`AsyncClient` (httpx.AsyncClient).

Answers are the server's JSON bodies, typed as ``TypedDict`` s (what /openapi.json documents);
an error answer raises :class:`ApiError` with the server's ``detail`` and ``field``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

import httpx

AgentMode = Literal["offline", "llm"]
JudgeMode = Literal["agent", "human"]


class Item(TypedDict):
    id: int
    title: str
    attributes: dict[str, Any]


class Session(TypedDict):
    id: str
    thread_id: str
    user_id: str
    dataset: str
    status: Literal["idle", "running", "awaiting_feedback"]
    history: list[int]
    n_loops: int
    created_at: str
    updated_at: str


class SessionState(Session):
    rec_memory: list[dict[str, Any]]
    user_memory: list[dict[str, Any]]
    pending: dict[str, Any] | None
    usage: dict[str, Any]


class Round(TypedDict, total=False):
    round: int
    item: int
    item_title: str
    rec_reason: str
    reward_score: float | None
    reward_rank: int | None
    decision: Literal["accept", "reject"]
    user_reason: str
    usage: dict[str, Any]


class Recommendation(TypedDict):
    session_id: str
    loop_index: int
    status: Literal["completed", "awaiting_feedback"]
    item: Item | None
    reason: str | None
    stop_reason: Literal["accepted", "max_rounds"] | None
    rounds: list[Round]
    pending: dict[str, Any] | None
    duration_ms: float
    usage: dict[str, Any]


class Loop(TypedDict, total=False):
    loop_index: int
    status: Literal["running", "awaiting_feedback", "completed", "failed"]
    params: dict[str, Any]
    final_item: int | None
    final_reason: str | None
    stop_reason: str | None
    error: str | None
    rounds: list[Round]


class Page(TypedDict):
    data: list[Any]
    count: int


class CommandResult(TypedDict, total=False):
    preferences: dict[str, Any]
    parsed: dict[str, Any]
    recommendations: list[Item]
    understood: bool
    unparsed: list[str]
    usage: dict[str, Any]


@dataclass(frozen=True)
class StreamEvent:
    """One Server-Sent Event of a streamed loop: ``update`` / ``interrupt`` (a node's update),
    then ``result`` (the :class:`Recommendation`) or ``error``."""

    event: str
    data: Any


class ApiError(Exception):
    """An error answer: ``status`` is the HTTP status, ``detail`` and ``field`` the server's reason."""

    def __init__(self, status: int, detail: str, field: str | None):
        super().__init__(f"{status}: {detail}" + (f" (field {field})" if field else ""))
        self.status, self.detail, self.field = status, detail, field


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    json: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None

    def headers(self, stream: bool = False) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"} if stream else {}
        if self.idempotency_key:
            headers["Idempotency-Key"] = self.idempotency_key
        return headers


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _answer(response: httpx.Response) -> Any:
    if response.is_success:
        return None if response.status_code == 204 else response.json()
    try:
        body = response.json()
    except ValueError:
        body = {"detail": response.text}
    raise ApiError(response.status_code, str(body.get("detail")), body.get("field"))


class _EventDecoder:
    """Server-Sent Events, line by line (data lines are JSON)."""

    def __init__(self) -> None:
        self.event, self.data = "message", []

    def feed(self, line: str) -> StreamEvent | None:
        if line.startswith("event:"):
            self.event = line[6:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].lstrip())
        elif not line and self.data:
            event = StreamEvent(self.event, json.loads("\n".join(self.data)))
            self.event, self.data = "message", []
            return event
        return None


class _Calls:
    """Every /v1 call, described once; the clients below send them."""

    @staticmethod
    def create_session(user_id: str, history: list[int], idempotency_key: str | None = None) -> _Call:
        body = {"user_id": user_id, "history": history}
        return _Call("POST", "/v1/sessions", body, idempotency_key=idempotency_key)

    @staticmethod
    def list_sessions(
        user_id: str | None = None, status: str | None = None, limit: int = 50, offset: int = 0
    ) -> _Call:
        return _Call(
            "GET", "/v1/sessions", params=_params(user_id=user_id, status=status, limit=limit, offset=offset)
        )

    @staticmethod
    def get_session(session_id: str) -> _Call:
        return _Call("GET", f"/v1/sessions/{session_id}")

    @staticmethod
    def delete_session(session_id: str) -> _Call:
        return _Call("DELETE", f"/v1/sessions/{session_id}")

    @staticmethod
    def consumed(session_id: str, items: list[int], idempotency_key: str | None = None) -> _Call:
        return _Call(
            "POST", f"/v1/sessions/{session_id}/consumed", {"items": items}, idempotency_key=idempotency_key
        )

    @staticmethod
    def recommend(
        session_id: str,
        candidates: list[int] | None = None,
        max_rounds: int | None = None,
        agents: AgentMode = "offline",
        judge_mode: JudgeMode = "agent",
        idempotency_key: str | None = None,
    ) -> _Call:
        body = {
            **_params(candidates=candidates, max_rounds=max_rounds),
            "agents": agents,
            "judge_mode": judge_mode,
        }
        return _Call(
            "POST", f"/v1/sessions/{session_id}/recommendations", body, idempotency_key=idempotency_key
        )

    @staticmethod
    def feedback(
        session_id: str,
        decision: Literal["accept", "reject"],
        reason: str,
        idempotency_key: str | None = None,
    ) -> _Call:
        body = {"decision": decision, "reason": reason}
        return _Call("POST", f"/v1/sessions/{session_id}/feedback", body, idempotency_key=idempotency_key)

    @staticmethod
    def command(session_id: str, text: str, idempotency_key: str | None = None) -> _Call:
        return _Call(
            "POST", f"/v1/sessions/{session_id}/commands", {"text": text}, idempotency_key=idempotency_key
        )

    @staticmethod
    def commands(session_id: str, limit: int = 20, offset: int = 0) -> _Call:
        return _Call("GET", f"/v1/sessions/{session_id}/commands", params={"limit": limit, "offset": offset})

    @staticmethod
    def loops(session_id: str, limit: int = 20, offset: int = 0, status: str | None = None) -> _Call:
        params = _params(limit=limit, offset=offset, status=status)
        return _Call("GET", f"/v1/sessions/{session_id}/loops", params=params)

    @staticmethod
    def usage(since: str | None = None, until: str | None = None) -> _Call:
        return _Call("GET", "/v1/usage", params=_params(since=since, until=until))


def _headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"}


class Client:
    """The sync client. Use it as a context manager, or call :meth:`close`."""

    def __init__(
        self, base_url: str, api_key: str, *, timeout: float = 120.0, http: httpx.Client | None = None
    ):
        self.http = http or httpx.Client(base_url=base_url, headers=_headers(api_key), timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _send(self, call: _Call) -> Any:
        response = self.http.request(
            call.method, call.path, json=call.json, params=call.params, headers=call.headers()
        )
        return _answer(response)

    def _stream(self, call: _Call) -> Iterator[StreamEvent]:
        with self.http.stream(
            call.method, call.path, json=call.json, headers=call.headers(stream=True)
        ) as response:
            if not response.is_success:
                response.read()
                _answer(response)
            decoder = _EventDecoder()
            for line in response.iter_lines():
                if (event := decoder.feed(line)) is not None:
                    yield event

    def create_session(
        self, user_id: str, history: list[int], *, idempotency_key: str | None = None
    ) -> Session:
        return self._send(_Calls.create_session(user_id, history, idempotency_key))

    def list_sessions(
        self, *, user_id: str | None = None, status: str | None = None, limit: int = 50, offset: int = 0
    ) -> Page:
        return self._send(_Calls.list_sessions(user_id, status, limit, offset))

    def get_session(self, session_id: str) -> SessionState:
        return self._send(_Calls.get_session(session_id))

    def delete_session(self, session_id: str) -> None:
        self._send(_Calls.delete_session(session_id))

    def consumed(self, session_id: str, items: list[int], *, idempotency_key: str | None = None) -> Session:
        return self._send(_Calls.consumed(session_id, items, idempotency_key))

    def recommend(self, session_id: str, **options: Any) -> Recommendation:
        """One loop: ``candidates``, ``max_rounds``, ``agents``, ``judge_mode``, ``idempotency_key``."""
        return self._send(_Calls.recommend(session_id, **options))

    def stream_recommend(self, session_id: str, **options: Any) -> Iterator[StreamEvent]:
        """One loop, streamed: each node's update as it runs, then the ``result`` event."""
        return self._stream(_Calls.recommend(session_id, **options))

    def feedback(
        self, session_id: str, decision: Literal["accept", "reject"], reason: str, **options: Any
    ) -> Recommendation:
        """Answer the proposal a human-judged loop waits on: it resumes."""
        return self._send(_Calls.feedback(session_id, decision, reason, **options))

    def command(self, session_id: str, text: str, **options: Any) -> CommandResult:
        return self._send(_Calls.command(session_id, text, **options))

    def commands(self, session_id: str, *, limit: int = 20, offset: int = 0) -> Page:
        return self._send(_Calls.commands(session_id, limit, offset))

    def loops(self, session_id: str, *, limit: int = 20, offset: int = 0, status: str | None = None) -> Page:
        return self._send(_Calls.loops(session_id, limit, offset, status))

    def usage(self, *, since: str | None = None, until: str | None = None) -> dict[str, Any]:
        return self._send(_Calls.usage(since, until))


class AsyncClient:
    """The async client: the same calls as :class:`Client`, awaited."""

    def __init__(
        self, base_url: str, api_key: str, *, timeout: float = 120.0, http: httpx.AsyncClient | None = None
    ):
        self.http = http or httpx.AsyncClient(base_url=base_url, headers=_headers(api_key), timeout=timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _send(self, call: _Call) -> Any:
        response = await self.http.request(
            call.method, call.path, json=call.json, params=call.params, headers=call.headers()
        )
        return _answer(response)

    async def _stream(self, call: _Call) -> AsyncIterator[StreamEvent]:
        async with self.http.stream(
            call.method, call.path, json=call.json, headers=call.headers(stream=True)
        ) as response:
            if not response.is_success:
                await response.aread()
                _answer(response)
            decoder = _EventDecoder()
            async for line in response.aiter_lines():
                if (event := decoder.feed(line)) is not None:
                    yield event

    async def create_session(
        self, user_id: str, history: list[int], *, idempotency_key: str | None = None
    ) -> Session:
        return await self._send(_Calls.create_session(user_id, history, idempotency_key))

    async def list_sessions(
        self, *, user_id: str | None = None, status: str | None = None, limit: int = 50, offset: int = 0
    ) -> Page:
        return await self._send(_Calls.list_sessions(user_id, status, limit, offset))

    async def get_session(self, session_id: str) -> SessionState:
        return await self._send(_Calls.get_session(session_id))

    async def delete_session(self, session_id: str) -> None:
        await self._send(_Calls.delete_session(session_id))

    async def consumed(
        self, session_id: str, items: list[int], *, idempotency_key: str | None = None
    ) -> Session:
        return await self._send(_Calls.consumed(session_id, items, idempotency_key))

    async def recommend(self, session_id: str, **options: Any) -> Recommendation:
        return await self._send(_Calls.recommend(session_id, **options))

    def stream_recommend(self, session_id: str, **options: Any) -> AsyncIterator[StreamEvent]:
        return self._stream(_Calls.recommend(session_id, **options))

    async def feedback(
        self, session_id: str, decision: Literal["accept", "reject"], reason: str, **options: Any
    ) -> Recommendation:
        return await self._send(_Calls.feedback(session_id, decision, reason, **options))

    async def command(self, session_id: str, text: str, **options: Any) -> CommandResult:
        return await self._send(_Calls.command(session_id, text, **options))

    async def commands(self, session_id: str, *, limit: int = 20, offset: int = 0) -> Page:
        return await self._send(_Calls.commands(session_id, limit, offset))

    async def loops(
        self, session_id: str, *, limit: int = 20, offset: int = 0, status: str | None = None
    ) -> Page:
        return await self._send(_Calls.loops(session_id, limit, offset, status))

    async def usage(self, *, since: str | None = None, until: str | None = None) -> dict[str, Any]:
        return await self._send(_Calls.usage(since, until))
