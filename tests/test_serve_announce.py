"""`recloop serve` prints its banner and the shown-once key when the port answers, never before,
and never loses the key when the server stops first."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.services.bootstrap import Announcement, port_in_use
from app.settings import get_settings
from cli import cli


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.send_response(200 if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_the_banner_waits_for_the_server_to_answer_and_is_said_once():
    port = _free_port()
    said: list[str] = []
    announcement = Announcement(
        "127.0.0.1", port, ["serving", "key: s3cret"], said.append, unsaid=["key: s3cret"], poll_s=0.02
    )
    thread = announcement.start()
    time.sleep(0.2)
    assert said == []  # nothing listens yet: a request now would go unanswered
    with socket.socket() as bound:  # bound and listening, but answering nothing: a worker still starting
        bound.bind(("127.0.0.1", port))
        bound.listen()
        time.sleep(0.3)
        assert said == [] and not announcement.said
    server = http.server.HTTPServer(("127.0.0.1", port), _Health)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        assert _wait_for(lambda: said == ["serving", "key: s3cret"])
        thread.join(timeout=5)
        assert not thread.is_alive() and announcement.said
    finally:
        server.shutdown()
        server.server_close()
    announcement.flush()  # the normal shutdown path: already said, nothing repeated
    assert said == ["serving", "key: s3cret"]


def test_a_server_that_stops_before_answering_shows_the_key_and_never_says_serving():
    said: list[str] = []
    announcement = Announcement(
        "127.0.0.1",
        _free_port(),
        ["serving", "key: s3cret"],
        said.append,
        unsaid=["key: s3cret"],
        poll_s=0.02,
    )
    thread = announcement.start()
    announcement.flush()  # what `recloop serve` does when uvicorn returns or raises
    thread.join(timeout=5)
    assert said == ["key: s3cret"] and not thread.is_alive() and not announcement.said


def test_port_in_use_sees_a_listener_on_a_wildcard_bind():
    port = _free_port()
    assert not port_in_use("0.0.0.0", port)
    with socket.socket() as server:
        server.bind(("0.0.0.0", port))
        server.listen()
        assert port_in_use("0.0.0.0", port)
        assert port_in_use("127.0.0.1", port)


def test_serve_on_a_busy_port_fails_at_once_and_sets_nothing_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    data_dir = tmp_path / "data"
    monkeypatch.setenv("RECLOOP_DATA_DIR", str(data_dir))
    get_settings.cache_clear()
    port = _free_port()
    try:
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", port))
            busy.listen()
            result = CliRunner().invoke(cli, ["serve", "--host", "127.0.0.1", "--port", str(port)])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 1
    assert f"127.0.0.1:{port} is already in use; choose another with --port" in result.output
    assert not data_dir.exists()  # no database started, no data fetched, no model trained
