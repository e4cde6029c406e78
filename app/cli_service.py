"""`recloop` commands of the service area."""

from __future__ import annotations

import typer


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""

    @cli.command()
    def serve() -> None:
        """Serve recommendations over HTTP (not yet available)."""
        typer.echo("recloop serve: the HTTP service is not yet available (see issue 4).", err=True)
        raise typer.Exit(2)
