"""Running the `recloop` command line in-process for tests, with settings read afresh."""

from __future__ import annotations

from typer.testing import CliRunner

from app.settings import get_settings
from cli import cli


def invoke(*args: str):
    """``recloop ARGS`` with the settings cache cleared before and after (the test's environment
    is what the command reads, and it leaks into no other test)."""
    get_settings.cache_clear()
    try:
        return CliRunner().invoke(cli, list(args))
    finally:
        get_settings.cache_clear()
