"""The `recloop` command line. Each area registers its own commands; this file only wires them."""

from __future__ import annotations

import typer

from app import cli_data, cli_eval, cli_graph, cli_models, cli_service, cli_steering

cli = typer.Typer(help="recloop: agentic recommendation with a feedback loop.", no_args_is_help=True)
eval_cli = typer.Typer(help="Evaluate models and the feedback loop.", no_args_is_help=True)
cli.add_typer(eval_cli, name="eval")

for area in (cli_data, cli_models, cli_graph, cli_service, cli_eval, cli_steering):
    area.register(cli, eval_cli)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
