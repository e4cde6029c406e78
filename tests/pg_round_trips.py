"""A TCP proxy in front of PostgreSQL that counts round trips, for tests that bound a request's.

A round trip is a burst of client messages sent after the server last answered (or after
connecting): what a driver has to wait for. A pipeline (several statements, then one Sync) is
one, as is a simple query holding several statements. Each is labelled with its first
statement, so a failing bound shows what was sent. Counting only starts after the connection's
start-up (authentication and the pools' session settings are not a request's cost).
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field

from tests.tcp_proxy import TcpProxy, Watcher

_UNTYPED_CODES = (80877103, 80877104)  # SSLRequest, GSSENCRequest: answered by one byte, then start-up


@dataclass
class RoundTrips:
    """What the proxy counted since :meth:`reset`: each round trip's first statement."""

    labels: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.labels.values())

    def reset(self) -> None:
        self.labels.clear()

    def table(self, per: int = 1) -> str:
        rows = [f"{count / per:6.2f}  {label}" for label, count in self.labels.most_common()]
        return "\n".join([*rows, f"{self.total / per:6.2f}  in all"])


class _Connection:
    def __init__(self, counted: RoundTrips) -> None:
        self.counted = counted
        self.buffer = b""
        self.started = False  # the start-up message went through: typed messages from now on
        self.ready = False  # the server said ReadyForQuery once: the connection is set up
        self.in_burst = False
        self.label: str | None = None
        self.statements: dict[bytes, str] = {}  # prepared statement name -> its query

    def from_client(self, data: bytes) -> None:
        if not self.in_burst:
            self.in_burst, self.label = True, None
        self.buffer += data
        while True:
            message = self._next_message()
            if message is None:
                return
            kind, body = message
            if self.label is None and kind in (b"Q", b"P", b"B"):
                self.label = self._statement(kind, body)
                if self.ready:
                    self.counted.labels[self.label] += 1

    def from_server(self, data: bytes) -> None:
        self.in_burst = False
        if not self.ready and b"Z\x00\x00\x00\x05" in data:
            self.ready = True

    def _next_message(self) -> tuple[bytes, bytes] | None:
        if not self.started:
            if len(self.buffer) < 8:
                return None
            (length,) = struct.unpack("!i", self.buffer[:4])
            if len(self.buffer) < length:
                return None
            (code,) = struct.unpack("!i", self.buffer[4:8])
            self.buffer = self.buffer[length:]
            self.started = code not in _UNTYPED_CODES
            return b"", b""
        if len(self.buffer) < 5:
            return None
        (length,) = struct.unpack("!i", self.buffer[1:5])
        if len(self.buffer) < 1 + length:
            return None
        kind, body = self.buffer[:1], self.buffer[5 : 1 + length]
        self.buffer = self.buffer[1 + length :]
        return kind, body

    def _statement(self, kind: bytes, body: bytes) -> str:
        if kind == b"Q":
            return _short(body.split(b"\0", 1)[0])
        name = body.split(b"\0", 1)[0] if kind == b"P" else body.split(b"\0", 2)[1]
        if kind == b"P":
            self.statements[name] = _short(body.split(b"\0", 2)[1])
        return self.statements.get(name, "(a prepared statement)")


def _short(query: bytes) -> str:
    return " ".join(query.decode(errors="replace").split())[:90]


class RoundTripProxy(TcpProxy):
    """``async with RoundTripProxy(host, port) as proxy``: connect to ``proxy.port`` instead; what
    was sent is in ``proxy.counted``."""

    def __init__(self, host: str, port: int) -> None:
        self.counted = RoundTrips()
        super().__init__(host, port, watch=self._watch)

    def _watch(self) -> tuple[Watcher, Watcher]:
        connection = _Connection(self.counted)
        return connection.from_client, connection.from_server
