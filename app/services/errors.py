"""Domain errors of the service. app/api/errors.py maps them to HTTP responses in one place."""

from __future__ import annotations

from psycopg import OperationalError as PsycopgOperationalError
from psycopg_pool import PoolTimeout
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as SQLAlchemyPoolTimeout

DATABASE_DOWN = (
    OperationalError,
    InterfaceError,
    SQLAlchemyPoolTimeout,
    PsycopgOperationalError,
    PoolTimeout,
)
"""Exceptions that mean the database cannot be reached right now (503 with Retry-After)."""


class ServiceError(Exception):
    """Base: ``status`` is the HTTP status, ``field`` names the offending input when there is one,
    ``retry_after_s`` says when a retry may succeed (sent as ``Retry-After``)."""

    status: int = 400

    def __init__(self, detail: str, *, field: str | None = None, retry_after_s: int | None = None):
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.retry_after_s = retry_after_s


class InvalidInput(ServiceError):
    status = 422


class Unauthorized(ServiceError):
    status = 401


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class SessionBusy(Conflict):
    """Another loop runs on the session (in this or another process)."""


class KeyInFlight(Conflict):
    """The first request with this Idempotency-Key is still running (or its loop is)."""


class AwaitingFeedback(Conflict):
    """The session's loop waits for a human judgement: answer it first."""


class NotAwaitingFeedback(Conflict):
    pass


class Unavailable(ServiceError):
    """A dependency (database, models, LLM configuration) is not there right now."""

    status = 503


class LoopSuperseded(Unavailable):
    """The loop was taken over (resumed, or resolved) by another worker while its worker was cut off
    from the database; the worker finished it later and its result was discarded (a keyed retry
    answers with the loop as recorded, or runs it again if it failed)."""


class LoopFailed(ServiceError):
    """The loop raised while it ran; it is recorded as failed in the session's history."""

    status = 500


class RateLimited(ServiceError):
    """The key's request rate or daily LLM-token budget is used up; ``retry_after_s`` tells when to retry."""

    status = 429

    def __init__(self, detail: str, *, retry_after_s: int, field: str | None = None):
        super().__init__(detail, field=field, retry_after_s=retry_after_s)
