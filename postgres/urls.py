"""Database URLs: one libpq form for psycopg/LangGraph, one SQLAlchemy form for the ORM."""

from __future__ import annotations

from sqlalchemy.engine import make_url

_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2", "postgresql+asyncpg")


class DatabaseUrlError(ValueError):
    pass


def _check_scheme(url: str) -> str:
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in _SCHEMES:
        raise DatabaseUrlError(f"database URL must start with postgresql:// (got scheme {scheme!r})")
    return scheme


def libpq_url(url: str) -> str:
    """``postgresql://...`` as psycopg and LangGraph's saver expect it."""
    scheme = _check_scheme(url)
    return "postgresql://" + url[len(scheme) + 3 :]


def sqlalchemy_url(url: str) -> str:
    """``postgresql+psycopg://...``: SQLAlchemy on psycopg 3 (async and sync share the driver)."""
    return "postgresql+psycopg://" + libpq_url(url)[len("postgresql://") :]


def with_database(url: str, database: str) -> str:
    """The same server, another database (e.g. a fresh test database)."""
    return libpq_url(make_url(sqlalchemy_url(url)).set(database=database).render_as_string(False))


def redact(url: str) -> str:
    """The URL without its password, for logs and error messages."""
    return make_url(sqlalchemy_url(url)).render_as_string(hide_password=True)
