"""The `recloop` command line. Each area registers its own commands; this package only wires them."""

from __future__ import annotations

import typer

from app.cli import calibrate, data, evaluate, models, service, simulate, steering

cli = typer.Typer(help="recloop: agentic recommendation with a feedback loop.", no_args_is_help=True)
eval_cli = typer.Typer(help="Evaluate models and the feedback loop.", no_args_is_help=True)
cli.add_typer(eval_cli, name="eval")

for area in (data, models, simulate, service, evaluate, steering, calibrate):
    area.register(cli, eval_cli)


def main() -> None:
    cli()
