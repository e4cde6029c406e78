"""Alembic environment: the service's own tables; LangGraph's checkpoint schema is invisible here."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from app.db.models import Base, include_in_autogenerate
from app.settings import Settings
from postgres.urls import sqlalchemy_url

config = context.config
target_metadata = Base.metadata


def _database_url() -> str:
    """Programmatic callers (app/db/migrate.py) pass the URL; the alembic CLI reads DATABASE_URL."""
    url = config.attributes.get("database_url") or Settings().database_url
    if not url:
        raise SystemExit(
            "no database URL: set DATABASE_URL, or run `recloop db migrate` (which also starts the "
            "embedded PostgreSQL when DATABASE_URL is unset)"
        )
    return sqlalchemy_url(url)


def run_migrations_offline() -> None:
    context.configure(url=_database_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(_database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            include_name=include_in_autogenerate,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
