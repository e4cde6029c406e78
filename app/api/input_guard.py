"""What PostgreSQL cannot store never reaches a handler: one check of every request's JSON body and
query string, for both APIs (``/v1`` and LangGraph's protocol).

Refused with 422 naming the field (keys included), before any handler runs:

- text holding a NUL character or a lone UTF-16 surrogate (``"\\ud800"``): PostgreSQL's ``text``
  and ``jsonb`` refuse both, and neither is Unicode text a client meant to send;
- integers beyond 64 bits (``bigint``'s range; a JavaScript client cannot even hold them exactly)
  and numbers that are not finite (``NaN``, ``Infinity``: not JSON, and ``jsonb`` refuses them);
- a body nested deeper than ``Settings.max_json_depth`` arrays and objects, with its own message.

A query string is checked for NUL characters (percent-decoding turns invalid UTF-8, surrogates
included, into U+FFFD); its integers are typed and bounded where they are declared. The body is
read whole (app/api/body_limit.py, outside, caps it) and handed on unchanged; a refused request's
body is read to its end too, so its keep-alive connection serves the next request.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.errors import error_response, field_path
from app.api.request_body import read_body, receive_again

INT64 = (-(2**63), 2**63 - 1)
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


def _text_problem(text: str) -> str | None:
    found = _NOT_TEXT.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "contains a NUL character (text cannot hold one)"
    return f"contains a lone UTF-16 surrogate (\\u{ord(found.group()):04x}), which is not Unicode text"


def _value_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return _text_problem(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        return f"integer out of range: at most 64 bits ({INT64[0]}..{INT64[1]})"
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number (JSON has no NaN or Infinity)"
    return None


def _too_deep(max_depth: int) -> str:
    return f"nested deeper than {max_depth} arrays and objects (RECLOOP_MAX_JSON_DEPTH)"


def json_problem(document: Any, max_depth: int) -> tuple[str | None, str] | None:
    """The first value (in document order) that cannot be stored, as (field, what is wrong)."""
    stack: list[tuple[Any, tuple, int]] = [(document, (), 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= max_depth:
                return field_path(path), _too_deep(max_depth)
            items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
            for key, _ in items:
                if isinstance(key, str) and (problem := _text_problem(key)) is not None:
                    return field_path(path), f"the key {key!r} {problem}"
            stack.extend((item, (*path, key), depth + 1) for key, item in reversed(items))
        elif (problem := _value_problem(value)) is not None:
            return field_path(path), problem
    return None


def _is_json(headers: Headers) -> bool:
    """Whether FastAPI reads this body as JSON (no content type, or application/json or */*+json)."""
    content_type = headers.get("content-type")
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _query_problem(query_string: bytes) -> tuple[str | None, str] | None:
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if (problem := _text_problem(name)) is not None:
            return None, f"the query parameter {name!r} {problem}"
        if (problem := _text_problem(value)) is not None:
            return name, problem
    return None


def _refusal(field: str | None, problem: str):
    return error_response(422, f"{field or 'body'}: {problem}", field or "body")


class InputGuardMiddleware:
    def __init__(self, app: ASGIApp, max_json_depth: int):
        self.app = app
        self.max_json_depth = max_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = _query_problem(scope.get("query_string", b""))
        headers = Headers(scope=scope)
        has_body = headers.get("content-length", "0") != "0" or "transfer-encoding" in headers
        if problem is None and not (has_body and _is_json(headers)):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive) if has_body else b""
        if problem is None and body:
            problem = self._body_problem(body)
        if problem is not None:
            await _refusal(*problem)(scope, receive, send)
            return
        await self.app(scope, receive_again(body, receive), send)

    def _body_problem(self, body: bytes) -> tuple[str | None, str] | None:
        try:
            document = json.loads(body)
        except RecursionError:
            return None, _too_deep(self.max_json_depth)
        except ValueError:  # not JSON, or not UTF-8: FastAPI's own answer says which
            return None
        return json_problem(document, self.max_json_depth)
