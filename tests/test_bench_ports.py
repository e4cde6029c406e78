"""Servers spawned by the benchmarks and integration tests start race-free, and a failed start says
why (bench/ports.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench.ports import port_listening, reserved_port, spawn_logged, wait_ready

_SERVE = """
import socket, sys, time
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn, PostgreSQL, HAProxy do
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen()
time.sleep(30)
"""


def test_a_reserved_port_is_kept_from_others_until_its_server_listens(tmp_path: Path):
    with reserved_port() as port:
        with socket.socket() as intruder, pytest.raises(OSError):  # what an ephemeral port's user does
            intruder.bind(("127.0.0.1", port))
        handed_out = set()
        for _ in range(200):  # nor is it handed out as a free port
            with socket.socket() as other:
                other.bind(("127.0.0.1", 0))
                handed_out.add(other.getsockname()[1])
        assert port not in handed_out
        server = spawn_logged([sys.executable, "-c", _SERVE, str(port)], tmp_path / "server.log")
        try:
            wait_ready(server, port_listening(port), what="the server", timeout_s=20, poll_s=0.05)
        finally:
            server.kill()
            server.wait()


def test_a_server_that_exits_while_starting_raises_with_its_log_tail(tmp_path: Path):
    log_path = tmp_path / "server.log"
    crash = "import sys; print('ERROR: [Errno 98] address already in use'); sys.exit(3)"
    with reserved_port() as port:
        server = spawn_logged([sys.executable, "-c", crash], log_path)
        with pytest.raises(RuntimeError) as failed:
            wait_ready(server, port_listening(port), what="replica 1", timeout_s=20, log_path=log_path)
    assert str(failed.value).startswith("replica 1 exited with 3 while starting:\n")
    assert "address already in use" in str(failed.value)


def test_a_server_that_never_answers_is_stopped_and_named(tmp_path: Path):
    with reserved_port() as port:
        server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        with pytest.raises(RuntimeError, match="the server not ready after 1 s"):
            wait_ready(server, port_listening(port), what="the server", timeout_s=1, poll_s=0.1)
        assert server.wait(timeout=10) is not None
