"""Fail fast in an outage: while the database is known to be down, a request waits for a pooled
connection at most ``Settings.db_outage_timeout_s`` (about a second), not ``db_pool_timeout_s``.

``db_pool_timeout_s`` (15 s) is how long a request may queue for a connection under load, when
the database is up and every connection busy. With the database down the same wait only delays
the 503: the pools cannot connect, and a client (or its load balancer) learns nothing for 15 s.
So the gate shortens every pool's acquire timeout while the database is down, and restores it as
soon as any connection is made again:

- down: a request's error says the server cannot be reached (connection refused or closed:
  ``OperationalError``/``InterfaceError``, not a pool's timeout, which load alone can cause), or
  the recovery watch (every ``Settings.stale_check_s``) cannot reach it;
- up: a pool made a new connection (SQLAlchemy's ``connect`` event, psycopg's ``configure``), or
  the gate's own probe (a plain connection every ``PROBE_S`` while it is down) got through. Then
  each psycopg pool is asked for one connection at once: after a long outage its own reconnection
  backs off exponentially (1, 2, 4 ... s), and the first requests after the recovery would wait
  for it. While the gate is down requests still try, so they succeed as soon as a connection can
  be had.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

import psycopg
from psycopg import InterfaceError as PsycopgInterfaceError
from psycopg import OperationalError as PsycopgOperationalError
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from sqlalchemy import event
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

UNREACHABLE = (OperationalError, InterfaceError, PsycopgOperationalError, PsycopgInterfaceError)
"""Errors that mean the server could not be reached (a pool's timeout is not one: load causes it)."""
PROBE_S = 0.5
"""How often a worker whose gate is down tries a plain connection to the database."""
_log = logging.getLogger(__name__)


class OutageGate:
    """The acquire timeout of a worker's pools: ``normal_s``, or ``outage_s`` while the database is down."""

    def __init__(self, *, normal_s: float, outage_s: float):
        self.normal_s, self.outage_s = normal_s, outage_s
        self.down_since: float | None = None
        """``time.monotonic()`` when the database was found down; None while it is up."""
        self._pools: list[AsyncConnectionPool] = []
        self._engines: list[AsyncEngine] = []
        self._probe: asyncio.Task | None = None

    @property
    def is_down(self) -> bool:
        return self.down_since is not None

    def watch_pool(self, pool: AsyncConnectionPool) -> None:
        """Govern ``pool``'s acquire timeout (its ``configure`` calls :meth:`up`: see :meth:`on_connect`)."""
        self._pools.append(pool)
        pool.timeout = self._timeout()

    def watch_engine(self, engine: AsyncEngine) -> None:
        """Govern ``engine``'s pool timeout; each new connection it makes lifts the gate."""
        self._engines.append(engine)
        engine.pool._timeout = self._timeout()  # QueuePool's wait for a free connection
        event.listen(engine.sync_engine, "connect", lambda *_: self.up())

    def on_connect(self) -> Callable[[], None]:
        """What a psycopg pool's ``configure`` callback calls after connecting."""
        return self.up

    def saw(self, exc: BaseException) -> None:
        """A request or the watch failed with ``exc``: down, if it says the server is unreachable."""
        # psycopg_pool's PoolTimeout is an OperationalError too, and means only that all were busy.
        if isinstance(exc, UNREACHABLE) and not isinstance(exc, PoolTimeout):
            self.down()

    def down(self) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            self._apply()
            _log.warning("database down: requests wait at most %.1f s for a connection", self.outage_s)
            if self._pools and (self._probe is None or self._probe.done()):
                self._probe = asyncio.get_running_loop().create_task(self._probe_until_up())

    def up(self) -> None:
        if self.down_since is not None:
            _log.warning("database back after %.1f s", time.monotonic() - self.down_since)
            self.down_since = None
            self._apply()
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to hurry
                asyncio.get_running_loop().create_task(self._refill())

    async def close(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe

    async def _probe_until_up(self) -> None:
        pool = self._pools[0]
        while self.down_since is not None:
            await asyncio.sleep(PROBE_S)
            try:
                conn = await psycopg.AsyncConnection.connect(pool.conninfo, connect_timeout=1)
            except psycopg.Error:
                continue
            await conn.close()
            self.up()

    async def _refill(self) -> None:
        """One new connection in each psycopg pool now, past its reconnection's back-off (growing
        its minimum by one asks for exactly that; the minimum goes back at once)."""
        for pool in self._pools:
            if pool.closed or pool.min_size >= pool.max_size:
                continue
            try:
                await pool.resize(pool.min_size + 1, pool.max_size)
                await pool.resize(pool.min_size - 1, pool.max_size)
            except Exception as exc:  # a hurry, not a need: the pool reconnects by itself anyway
                _log.info("could not hurry the pool's reconnection: %s", exc)

    def _timeout(self) -> float:
        return self.outage_s if self.is_down else self.normal_s

    def _apply(self) -> None:
        timeout = self._timeout()
        for pool in self._pools:
            pool.timeout = timeout
        for engine in self._engines:
            engine.pool._timeout = timeout
