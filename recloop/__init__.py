"""The Python client of recloop's /v1 API: ``recloop.Client`` (sync) and ``recloop.AsyncClient``.

    from recloop import Client

    with Client("http://127.0.0.1:8000", api_key="rl_...") as client:
        session = client.create_session(user_id="alice", history=[49, 180, 257])
        answer = client.recommend(session["id"], max_rounds=3)
        print(answer["item"]["title"], answer["reason"])

It needs only httpx and imports nothing of the server, so a notebook can use it without the
models; the server (``recloop serve``) is the ``app`` package of this distribution, which a wheel
installs under ``recloop/_server/``, out of the way of any other project's ``app`` (see setup.py).
"""

from recloop.client import ApiError, AsyncClient, Client, StreamEvent

__all__ = ["ApiError", "AsyncClient", "Client", "StreamEvent"]
