"""The service's own storage: SQLAlchemy models, engines and keyword-only repositories."""
