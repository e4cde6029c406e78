"""`recloop` commands of the eval area."""

from __future__ import annotations

import typer


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
