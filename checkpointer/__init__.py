"""A LangGraph checkpoint saver for PostgreSQL over a connection pool, durable once per loop round.

A library below the service: it knows LangGraph and psycopg, and nothing of recloop's graph,
database models or settings (:mod:`checkpointer.saver`; the stock saver's row format it writes is
mirrored in :mod:`checkpointer.stock_format`). The functions beside the class hand a run's rows to
the caller's own transaction, whatever saver the service was configured with.
"""

from checkpointer.saver import PooledPostgresSaver, commit_with, discard, flush, write_in

__all__ = ["PooledPostgresSaver", "commit_with", "discard", "flush", "write_in"]
