"""The `recloop` command line. Each area registers its own commands; this package only wires them."""

from __future__ import annotations

import typer

from cli import calibrate, data, evaluate, models, service, simulate, steering

cli = typer.Typer(help="recloop: agentic recommendation with a feedback loop.", no_args_is_help=True)
eval_cli = typer.Typer(help="Evaluate models and the feedback loop.", no_args_is_help=True)
cli.add_typer(eval_cli, name="eval")

for area in (data, models, simulate, service, evaluate, steering, calibrate):
    area.register(cli, eval_cli)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"recloop {version('recloop')}")
        raise typer.Exit()


@cli.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """recloop: agentic recommendation with a feedback loop."""


def main() -> None:
    import sys

    from cli.output import json_only_stdout

    with json_only_stdout("--json" in sys.argv[1:]):  # --json: only the JSON object on stdout
        cli()
