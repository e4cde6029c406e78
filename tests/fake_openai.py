"""A small OpenAI-compatible HTTP server for tests: scripted chat completions, recorded requests.

It is a real server (``http.server`` on 127.0.0.1, random port, daemon thread), so
the code under test goes through the real ChatOpenAI/openai client and HTTP stack::

    with FakeOpenAI() as server:
        server.enqueue(Reply.json({"thoughts": "...", "item_id": 3, "reason": "..."}), Reply.error(500))
        settings = Settings(llm_base_url=server.base_url, ...)
        ...
        server.requests[0].text   # every message of the first request, joined

Replies are consumed in order; when the queue is empty ``default`` answers
(``loop_autoresponder`` gives valid answers to the recloop agents' prompts).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build with the class methods."""

    kind: str  # "json" | "content" | "tool_call" | "error" | "raw"
    payload: Any = None
    status: int = 200
    delay_s: float = 0.0
    finish_reason: str | None = None
    """Overrides the finish reason ("length" = cut off at the output cap, "content_filter")."""
    usage: bool = True
    """False: the response carries no ``usage`` (some servers send none)."""
    cached_tokens: int = 0
    """Reported as ``usage.prompt_tokens_details.cached_tokens``."""

    @classmethod
    def json(cls, obj: Any) -> Reply:
        """``obj`` as a tool call when the request offers tools, else as JSON message content."""
        return cls("json", obj)

    @classmethod
    def content(cls, text: str) -> Reply:
        """Raw message content, e.g. malformed JSON."""
        return cls("content", text)

    @classmethod
    def tool_call(cls, arguments: Any) -> Reply:
        """A tool call to the tool the request forces (``arguments`` dict or raw string)."""
        return cls("tool_call", arguments)

    @classmethod
    def error(cls, status: int = 500, message: str = "scripted failure") -> Reply:
        return cls("error", message, status=status)

    @classmethod
    def cut_off(cls, text: str = '{"thoughts": "Let me think about this very carefully, step by') -> Reply:
        """An answer stopped by the output cap: finish reason ``length``, truncated content."""
        return cls("content", text, finish_reason="length")

    @classmethod
    def content_filtered(cls) -> Reply:
        return cls("content", "", finish_reason="content_filter")

    @classmethod
    def raw(cls, body: Any, status: int = 200) -> Reply:
        """Any HTTP body, e.g. JSON that is not a chat completion."""
        return cls("raw", body, status=status)

    def delayed(self, seconds: float) -> Reply:
        """The same reply after ``seconds`` (longer than the client timeout = a timeout)."""
        return dataclasses.replace(self, delay_s=seconds)

    def with_usage(self, *, usage: bool = True, cached_tokens: int = 0) -> Reply:
        return dataclasses.replace(self, usage=usage, cached_tokens=cached_tokens)


@dataclass
class RecordedRequest:
    path: str
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def text(self) -> str:
        """All message contents, joined: what the model was shown."""
        return "\n".join(str(m.get("content") or "") for m in self.messages)


Responder = Callable[[RecordedRequest], Reply]


def _words(text: str) -> int:
    return len(text.split())


class FakeOpenAI:
    """POST /v1/chat/completions with scripted replies; everything else is 404."""

    def __init__(
        self,
        default: Responder | None = None,
        *,
        tokenizer: bool = False,
        keep_alive: bool = False,
        model_name: str | None = None,
        port: int = 0,
    ):
        self.model_name = model_name
        """The model GET /v1/models lists (None: that route is 404, as on some servers)."""
        self.tokenizer = tokenizer
        """Serve llama.cpp's /apply-template and /tokenize (one token per word)."""
        self.keep_alive = keep_alive
        """HTTP/1.1 persistent connections, as llama.cpp and hosted APIs keep them (default: one
        request per connection)."""
        self.tokenizer_requests = 0
        self.requests: list[RecordedRequest] = []
        self.default = default or loop_autoresponder
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # --- script --------------------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            scripted = self._script.popleft() if self._script else None
        return scripted or self.default(request)

    # --- HTTP ----------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if server.keep_alive else "HTTP/1.0"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                if server.model_name and self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200, {"object": "list", "data": [{"id": server.model_name, "object": "model"}]}
                    )
                    return
                self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if server.tokenizer and self.path in ("/apply-template", "/tokenize"):
                    server.tokenizer_requests += 1
                    self._send(200, _tokenizer_answer(self.path, json.loads(raw or b"{}")))
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                request = RecordedRequest(self.path, body)
                reply = server._next_reply(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                status, payload = render(reply, request)
                self._send(status, payload)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        return Handler


def render(reply: Reply, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
    """The HTTP status and OpenAI-shaped body for one reply."""
    if reply.kind == "error":
        return reply.status, {"error": {"message": reply.payload, "type": "server_error", "code": None}}
    if reply.kind == "raw":
        return reply.status, reply.payload
    forced_tool = _forced_tool(request.body)
    as_tool = reply.kind == "tool_call" or (reply.kind == "json" and forced_tool is not None)
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if as_tool:
        args = reply.payload if isinstance(reply.payload, str) else json.dumps(reply.payload)
        name = forced_tool or "answer"
        message["tool_calls"] = [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}
        ]
        completion = args
    else:
        completion = reply.payload if reply.kind == "content" else json.dumps(reply.payload)
        message["content"] = completion
    prompt_tokens, completion_tokens = _words(request.text), _words(completion)
    body: dict[str, Any] = {
        "id": f"chatcmpl-{len(completion)}",
        "object": "chat.completion",
        "created": 0,
        "model": request.body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason or ("tool_calls" if as_tool else "stop"),
                "logprobs": None,
            }
        ],
    }
    if reply.usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        }
    return 200, body


def _tokenizer_answer(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """llama.cpp's routes, with one token per word (so tests can predict the counts)."""
    if path == "/apply-template":
        return {"prompt": "\n".join(str(m.get("content") or "") for m in body.get("messages", []))}
    return {"tokens": list(range(_words(str(body.get("content", "")))))}


def _forced_tool(body: dict[str, Any]) -> str | None:
    tools = body.get("tools") or []
    if not tools:
        return None
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return choice.get("function", {}).get("name")
    return tools[0].get("function", {}).get("name")


_CANDIDATE_LINE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


def loop_autoresponder(request: RecordedRequest) -> Reply:
    """Valid answers to recloop's agent prompts: the first candidate, accept, like every item."""
    text = request.text
    if '"item_id": <candidate id>' in text:
        section = text.split("Candidates ([id] title):", 1)[-1]
        first = _CANDIDATE_LINE.search(section)
        item = int(first.group(1)) if first else 0
        return Reply.json(
            {"thoughts": "first candidate", "item_id": item, "reason": "It is first in the list."}
        )
    if '"decisions"' in text:
        section = text.split("say whether you would interact with it", 1)[-1]
        ids = [int(i) for i in _CANDIDATE_LINE.findall(section)]
        return Reply.json({"thoughts": "all fine", "decisions": [{"item_id": i, "like": True} for i in ids]})
    return Reply.json({"thoughts": "fits", "decision": "accept", "reason": "It fits my history."})
