"""A plain ASGI middleware's view of the request body: read it whole, then hand it on unchanged."""

from __future__ import annotations

from starlette.types import Message, Receive


async def read_body(receive: Receive) -> bytes:
    """The whole body (app/api/body_limit.py, outside, raises once it passes the limit)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def receive_again(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app ``body`` once, then passes on what the client sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then: the client's disconnect, when it comes

    return replay
