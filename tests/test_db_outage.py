"""The outage gate (postgres/outage.py) without a database: which errors close it, what it sets."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg_pool import PoolTimeout
from sqlalchemy.exc import TimeoutError as SQLAlchemyPoolTimeout

from postgres.outage import OutageGate


@dataclass
class _Pool:
    """What the gate touches of a psycopg pool."""

    timeout: float = 0.0
    conninfo: str = "host=127.0.0.1 port=1 dbname=none"  # nothing listens: the probe fails
    closed: bool = False
    min_size: int = 1
    max_size: int = 1


async def test_an_unreachable_server_shortens_the_wait_and_a_connection_restores_it():
    gate = OutageGate(normal_s=15.0, outage_s=1.0)
    pool = _Pool()
    gate.watch_pool(pool)  # type: ignore[arg-type]
    assert pool.timeout == 15.0 and not gate.is_down
    for busy in (PoolTimeout("busy"), SQLAlchemyPoolTimeout("busy")):  # load, not an outage
        gate.saw(busy)
        assert not gate.is_down and pool.timeout == 15.0
    gate.saw(psycopg.OperationalError("connection refused"))
    assert gate.is_down and pool.timeout == 1.0
    gate.saw(psycopg.OperationalError("connection refused"))  # once down, it stays so
    assert pool.timeout == 1.0
    gate.on_connect()()  # a pool made a connection: the database is back
    assert not gate.is_down and pool.timeout == 15.0
    await gate.close()
