"""PostgreSQL plumbing below the service, knowing nothing of recloop's tables, graph or settings.

- :mod:`postgres.checkpoints`: a LangGraph checkpoint saver over a connection pool, durable once per
  loop round, writing the stock saver's rows (:mod:`postgres.checkpoint_format`, pinned to the
  LangGraph versions it was checked against);
- :mod:`postgres.locks`: session-level advisory locks on a pool of their own;
- :mod:`postgres.outage`: the gate that shortens pools' acquire timeout while the database is down;
- :mod:`postgres.embedded`: a private PostgreSQL server where none is configured;
- :mod:`postgres.urls`: one database URL in the forms libpq and SQLAlchemy take.

The service configures them (app/db/engine.py, app/db/database.py, app/services/runtime.py).
"""
