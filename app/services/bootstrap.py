"""What `recloop serve` does before any worker starts: database, schema, first key (the data, models
and calibration it prepares are the lab's: lab/prepare.py), and what a worker checks is in place.

Idempotent: a second start finds everything in place and takes seconds.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Sequence

from app.db.engine import create_engine, create_sessionmaker, resolve_database_url
from app.db.migrate import migrate_all
from app.services.keys import NewKey, create_first_key, create_key, list_keys, revoke_key
from app.settings import Settings
from postgres.urls import redact
from recmodels.artifacts import artifact_path
from recmodels.dataset import Dataset, DatasetNotFound

Echo = Callable[[str], None]


def prepare_database(settings: Settings, echo: Echo, *, migrate: bool = True) -> str:
    """Resolve (or start the embedded) PostgreSQL and, unless told not to, migrate it; return its URL."""
    if not settings.database_url:
        echo(f"starting the embedded PostgreSQL in {settings.data_dir / 'pg'} ...")
    url = resolve_database_url(settings)
    echo(f"database: {redact(url)}")
    if migrate:
        echo("applying migrations (service tables, then LangGraph's checkpoint schema) ...")
        migrate_all(url, settings.checkpoint_schema)
    return url


class NotPrepared(RuntimeError):
    """`serve --no-prepare` found no dataset or model where `recloop prepare` puts them."""


def check_prepared(settings: Settings) -> Dataset:
    """The dataset and model files a worker loads, or :class:`NotPrepared` naming what is missing."""
    try:
        dataset = Dataset.open(settings.datasets_dir, settings.dataset)
    except DatasetNotFound as exc:
        raise NotPrepared(f"dataset {settings.dataset!r} is missing ({exc}); run `recloop prepare`") from exc
    for model_name in dict.fromkeys((settings.rec_model, settings.reward_model)):
        path = artifact_path(settings.models_dir, dataset.name, model_name)
        if not path.is_file():
            raise NotPrepared(f"model {model_name!r} is missing at {path}; run `recloop prepare`")
    return dataset


async def _with_sessionmaker(url: str, settings: Settings, work):
    engine = create_engine(url, settings)
    try:
        return await work(create_sessionmaker(engine))
    finally:
        await engine.dispose()


def first_key(url: str, settings: Settings, owner: str = "admin") -> NewKey | None:
    return asyncio.run(_with_sessionmaker(url, settings, lambda sm: create_first_key(sm, owner=owner)))


def new_key(url: str, settings: Settings, owner: str) -> NewKey:
    return asyncio.run(_with_sessionmaker(url, settings, lambda sm: create_key(sm, owner=owner)))


def all_keys(url: str, settings: Settings) -> list:
    return asyncio.run(_with_sessionmaker(url, settings, list_keys))


def revoke(url: str, settings: Settings, key_id: int) -> bool:
    return asyncio.run(_with_sessionmaker(url, settings, lambda sm: revoke_key(sm, key_id=key_id)))


def _probe_host(host: str) -> str:
    """Where a local client reaches a server bound to ``host`` (a wildcard bind answers on loopback)."""
    return {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)


def port_in_use(host: str, port: int) -> bool:
    """Whether something already accepts connections on ``host:port``."""
    try:
        with socket.create_connection((_probe_host(host), port), timeout=0.5):
            return True
    except OSError:
        return False


def answers_http(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether a server at ``host:port`` answers ``GET /healthz`` with 200: serving, not just bound
    (with several workers the port is bound before any worker has started)."""
    import http.client

    connection = http.client.HTTPConnection(_probe_host(host), port, timeout=timeout_s)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


class Announcement:
    """Messages echoed once the server at ``host:port`` answers HTTP, by a daemon thread (:meth:`start`).

    The server loads models and opens its pools before it answers, which takes seconds on a first
    start; a key printed before then invites a request nobody answers yet, and "serving" printed
    before then may be false. :meth:`flush` is called when the server stops: if it never answered,
    only ``unsaid`` is echoed (the shown-once key must not be lost, but nothing says "serving").
    Each message is echoed at most once.
    """

    def __init__(
        self,
        host: str,
        port: int,
        messages: Sequence[str],
        echo: Echo,
        *,
        unsaid: Sequence[str] = (),
        poll_s: float = 0.25,
    ):
        self.host, self.port, self.messages, self.echo, self.poll_s = host, port, list(messages), echo, poll_s
        self.unsaid = list(unsaid)
        self.said = False
        self._done = False
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._wait_then_echo, name="recloop-announce", daemon=True)
        thread.start()
        return thread

    def flush(self) -> None:
        self._stop.set()
        self._echo_once(self.unsaid)

    def _wait_then_echo(self) -> None:
        while not self._stop.is_set():
            if answers_http(self.host, self.port):
                self._echo_once(self.messages)
                return
            self._stop.wait(self.poll_s)

    def _echo_once(self, messages: Sequence[str]) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            self.said = messages is self.messages
            for message in messages:
                self.echo(message)
