"""A TCP proxy on 127.0.0.1 in front of a server (PostgreSQL, for tests): switchable, and watchable."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

Watcher = Callable[[bytes], None]


class TcpProxy:
    """Connect to ``proxy.port`` instead of the server. :meth:`stop` makes the server unreachable
    (open connections are cut); :meth:`start` serves again on the same port. ``watch``, called once
    per connection, returns what sees the bytes each way: (from the client, from the server)."""

    def __init__(
        self, host: str, port: int, watch: Callable[[], tuple[Watcher, Watcher]] | None = None
    ) -> None:
        self.target = (host, port)
        self.watch = watch
        self.port = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        await self._server.wait_closed()

    async def __aenter__(self) -> TcpProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        from_client, from_server = self.watch() if self.watch else (None, None)
        tasks = {
            asyncio.create_task(_pipe(reader, up_writer, from_client)),
            asyncio.create_task(_pipe(up_reader, writer, from_server)),
        }
        self._pipes |= tasks
        try:
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            self._pipes -= tasks
            for w in (writer, up_writer):
                w.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, watcher: Watcher | None) -> None:
    with contextlib.suppress(ConnectionError, asyncio.CancelledError):
        while data := await reader.read(65536):
            if watcher is not None:
                watcher(data)
            writer.write(data)
            await writer.drain()
