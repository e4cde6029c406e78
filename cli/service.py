"""`recloop` commands of the service area: serve, prepare, keys create|list|revoke, db migrate|prune."""

from __future__ import annotations

import os
import signal
import traceback

import typer

from app.settings import Settings, get_settings

keys_cli = typer.Typer(help="Manage API keys.", no_args_is_help=True)
db_cli = typer.Typer(help="Database set-up.", no_args_is_help=True)


def _exit_on_signal(signum: int, frame: object) -> None:
    """Called once uvicorn's graceful shutdown is done: say so, and exit.

    Ctrl-C is how a person stops the server, so it exits 0 (``make serve`` then ends without
    "Error 130"); SIGTERM keeps the conventional 128 + 15 for supervisors.
    """
    _echo("recloop stopped: the server shut down cleanly (sessions are kept in the database)")
    raise SystemExit(0 if signum == signal.SIGINT else 128 + signum)


def _stop_during_startup(signum: int, frame: object) -> None:
    """A stop signal before the server runs (database, data, training): nothing was served."""
    _echo(f"recloop stopped during start-up ({signal.Signals(signum).name}): nothing was served")
    raise SystemExit(0 if signum == signal.SIGINT else 128 + signum)


def key_lines(key_secret: str | None) -> list[str]:
    """The first start's key, shown once whether or not the server then starts."""
    if key_secret is None:
        return []
    return [f"API key (shown once, store it now): {key_secret}"]


def serve_banner(dataset: str, base: str, key_secret: str | None) -> list[str]:
    """What `recloop serve` says once the server answers; the first start's key is shown once."""
    banner = [f"recloop serving {dataset} on {base}  (API docs: {base}/docs)"]
    if key_secret is not None:
        banner.extend(key_lines(key_secret))
        banner.append(f"  try: curl -H 'Authorization: Bearer {key_secret}' '{base}/v1/items?q=toy'")
    else:
        banner.append("API keys exist already (shown once, at the first start); lost yours? make another:")
        banner.append("  recloop keys create --owner YOUR_NAME")
    return banner


def _echo(message: str) -> None:
    typer.echo(message, err=True)


def _settings(**overrides: object) -> Settings:
    settings = get_settings()
    updates = {k: v for k, v in overrides.items() if v is not None}
    return settings.model_copy(update=updates) if updates else settings


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    cli.add_typer(keys_cli, name="keys")
    cli.add_typer(db_cli, name="db")

    @cli.command()
    def serve(
        host: str = typer.Option(None, help="Bind address (default RECLOOP_HOST, 127.0.0.1)."),
        port: int = typer.Option(None, help="Port (default RECLOOP_PORT, 8000)."),
        workers: int = typer.Option(
            None, min=1, help="uvicorn worker processes (default RECLOOP_WORKERS, 1)."
        ),
        migrate: bool = typer.Option(
            True,
            help="Apply migrations first; --no-migrate when a one-shot `recloop db migrate` ran (compose).",
        ),
        prepare: bool = typer.Option(
            True,
            help="Fetch data and train models if absent; --no-prepare when a one-shot `recloop prepare` "
            "ran (compose, Kubernetes): then missing files are an error, not minutes of training.",
        ),
    ) -> None:
        """Set up everything a fresh machine needs (database, data, models, a key), then serve over HTTP."""
        from app.services import bootstrap, startup
        from lab import prepare as lab_prepare

        settings = _settings(host=host, port=port, workers=workers)
        if bootstrap.port_in_use(settings.host, settings.port):  # before minutes of set-up, not after
            _echo(f"error: {settings.host}:{settings.port} is already in use; choose another with --port")
            raise typer.Exit(1)
        # Until uvicorn runs, a stop signal ends the start-up at once, through atexit (which stops
        # an embedded PostgreSQL) and with a line that says nothing was served.
        for stop_signal in startup.STOP_SIGNALS:
            signal.signal(stop_signal, _stop_during_startup)
        url = bootstrap.prepare_database(settings, _echo, migrate=migrate)
        try:
            # The calibration is fitted here, with its progress shown, so that a worker only reads it.
            dataset = (
                lab_prepare.prepare_artifacts(settings, _echo)
                if prepare
                else bootstrap.check_prepared(settings)
            )
        except bootstrap.NotPrepared as exc:
            _echo(f"error: {exc}")
            raise typer.Exit(1) from exc
        except Exception as exc:  # the traceback for a bug report, then the cause and the fix, last
            traceback.print_exc()
            for line in startup.failure_lines(exc):
                _echo(line)
            raise typer.Exit(1) from exc
        if prepare:  # a fresh machine: the learned parser trains beside the server, which switches to it
            _train_parser_in_background(settings, dataset.name)
        key = bootstrap.first_key(url, settings)
        served = settings.model_copy(update={"database_url": url})  # the (possibly embedded) database
        base = f"http://{settings.host}:{settings.port}"
        _echo(f"starting the server on {base} ...")
        secret = key.secret if key is not None else None
        banner = serve_banner(dataset.name, base, secret)
        announcement = bootstrap.Announcement(
            settings.host, settings.port, banner, typer.echo, unsaid=key_lines(secret)
        )
        announcement.start()
        # uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown; turning them into SystemExit
        # lets atexit handlers run, which stops the embedded PostgreSQL cleanly.
        for stop_signal in startup.STOP_SIGNALS:
            signal.signal(stop_signal, _exit_on_signal)
        try:
            _run_uvicorn(settings, served, url)
        except (SystemExit, startup.StartupInterrupted):
            if announcement.said:
                raise  # it served, then stopped (_exit_on_signal said so)
            _not_served(announcement)
        else:
            if not announcement.said:
                _not_served(announcement)
        finally:
            announcement.flush()  # said already, or the server stopped first: the key is not lost

    @cli.command("prepare")
    def prepare(
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object (what is in place) last."),
        parser: bool = typer.Option(
            True,
            help="Train the learned steering parser too, if absent (`recloop prepare-parser`); "
            "--no-parser when a parser job of its own does it beside the server (compose, Kubernetes).",
        ),
    ) -> None:
        """Fetch the dataset, train the rec and reward models and fit the agents' calibration, if absent.

        A one-shot step like `recloop db migrate` (compose's and Kubernetes' prepare job); idempotent:
        a second run only checks. Workers started with `serve --no-prepare` then only load files."""
        import json
        import time

        from cli.steering import prepare_parser
        from lab import prepare as lab_prepare

        settings = _settings()
        started = time.perf_counter()
        dataset = lab_prepare.prepare_artifacts(settings, _echo)
        if parser:
            prepare_parser(settings, dataset, _echo)
        summary = {
            "dataset": dataset.name,
            "rec_model": settings.rec_model,
            "reward_model": settings.reward_model,
            "models_dir": str(settings.models_dir),
            "seconds": round(time.perf_counter() - started, 2),
        }
        models = f"{settings.rec_model}, {settings.reward_model}"
        _echo(f"prepared {dataset.name} ({models}) in {summary['seconds']} s")
        if as_json:
            typer.echo(json.dumps(summary))

    @keys_cli.command("create")
    def keys_create(
        owner: str = typer.Option(..., help="Who the key belongs to (sessions are per key)."),
    ) -> None:
        """Create an API key and print it (only its hash is stored)."""
        from app.db.engine import resolve_database_url
        from app.services import bootstrap

        settings = _settings()
        key = bootstrap.new_key(resolve_database_url(settings), settings, owner)
        typer.echo(key.secret)

    @keys_cli.command("list")
    def keys_list() -> None:
        """List API keys: id, owner, prefix, created, revoked (secrets are never stored)."""
        from app.db.engine import resolve_database_url
        from app.services import bootstrap

        settings = _settings()
        for key in bootstrap.all_keys(resolve_database_url(settings), settings):
            revoked = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "active"
            typer.echo(f"{key.id}\t{key.owner}\t{key.prefix}...\t{key.created_at:%Y-%m-%d %H:%M}\t{revoked}")

    @keys_cli.command("revoke")
    def keys_revoke(
        key_id: int = typer.Argument(..., help="The key's id (see `recloop keys list`)."),
    ) -> None:
        """Revoke an API key. Running workers stop accepting it within RECLOOP_API_KEY_CACHE_S (30 s)."""
        from app.db.engine import resolve_database_url
        from app.services import bootstrap

        settings = _settings()
        if not bootstrap.revoke(resolve_database_url(settings), settings, key_id):
            typer.echo(f"error: no active key with id {key_id}", err=True)
            raise typer.Exit(2)
        cache = settings.api_key_cache_s
        typer.echo(f"revoked key {key_id}; running workers stop accepting it within {cache:g} s")

    @db_cli.command("migrate")
    def db_migrate() -> None:
        """Apply Alembic migrations and create/upgrade LangGraph's checkpoint tables (run once per deploy)."""
        from app.services import bootstrap

        bootstrap.prepare_database(_settings(), _echo)
        _echo("database is up to date")

    @db_cli.command("prune")
    def db_prune(
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object (the counts) last."),
    ) -> None:
        """Apply the retention policy now: expire idle sessions past RECLOOP_SESSION_IDLE_TTL_DAYS, and
        keep only the newest checkpoint of sessions idle past RECLOOP_CHECKPOINT_HISTORY_DAYS, and
        delete Idempotency-Keys older than RECLOOP_IDEMPOTENCY_TTL_S.

        Safe while the service runs (each session under its lock; busy ones are skipped). The loop
        history is never pruned; a pruned session lists, shows its history and runs new loops."""
        import asyncio
        import json

        from app.db.engine import resolve_database_url
        from app.services import retention

        settings = _settings()
        url = resolve_database_url(settings)

        async def run() -> retention.PruneReport:
            async with retention.open_store(url, settings) as store:
                return await retention.prune(
                    store, settings, progress=lambda what, n: _echo(f"  {what.replace('_', ' ')}: {n}")
                )

        report = asyncio.run(run())
        before = sum(t["bytes"] for t in report.storage_before.values())
        after = sum(t["bytes"] for t in report.storage_after.values())
        _echo(
            f"pruned {report.sessions_pruned} sessions' checkpoint histories, expired "
            f"{report.sessions_expired} sessions and {report.idempotency_keys_expired} idempotency keys, "
            f"skipped {report.sessions_skipped_busy} busy; "
            f"checkpoint rows {before:,} -> {after:,} bytes"
        )
        if as_json:
            typer.echo(json.dumps(report.to_json()))


def _train_parser_in_background(settings, dataset: str) -> None:
    """Start `recloop prepare-parser` beside the server when ``auto`` would use a learned parser that
    is not trained yet: the first recommendation does not wait for it, and every worker switches at
    its next command once the artifact is written. Its output goes to data_dir/run/."""
    import subprocess
    import sys

    from app.services.parser_status import training_elsewhere, write_status
    from recmodels.text import text_available
    from steering.choice import learned_artifact

    config = settings.parser_config()
    if not settings.steering_parser_train_on_serve or config.choice != "auto":
        return
    if learned_artifact(config, dataset).is_file() or not text_available():
        return
    if training_elsewhere(settings, dataset):
        return  # another start of this data directory is training it already
    log = settings.data_dir / "run" / f"parser-{dataset}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    # Niced: the trainer takes the cores the server leaves idle, never a request's.
    entry = "import os; os.nice(10); import recloop._server as server; server.main()"
    with log.open("ab") as out:
        trainer = subprocess.Popen(  # noqa: S603 -- our own command line, no user input
            [sys.executable, "-c", entry, "prepare-parser"], stdout=out, stderr=out, start_new_session=True
        )
    write_status(settings, dataset, "training", pid=trainer.pid)
    _echo(
        f"training the learned steering parser in the background (log: {log}); "
        "the rules read commands until it is ready"
    )


def _not_served(announcement) -> None:
    """The server stopped before it answered: keep the key, then end on the cause and the fix."""
    from app.services import startup

    announcement.flush()
    if startup.state.interrupted is not None:
        _stop_during_startup(startup.state.interrupted, None)
    for line in startup.failure_lines(startup.state.error):
        _echo(line)
    raise typer.Exit(1)


def _run_uvicorn(settings: Settings, served: Settings, url: str) -> None:
    """Serve until stopped: in this process with one worker, else with uvicorn's worker processes."""
    import uvicorn

    from app.services import metrics

    if settings.workers == 1:  # this process serves: it hands the app its settings
        from app.main import create_app

        uvicorn.run(create_app(served), host=settings.host, port=settings.port, log_level="warning")
        return
    # Why the environment, and not an argument: with workers > 1 uvicorn accepts the app only
    # as an import string (here a factory), and starts each worker as a fresh *spawned*
    # process that imports it; uvicorn has no way to hand a worker a Python object, so the
    # factory (app.main.create_app_from_env) can only read its settings from what the workers
    # inherit: the environment. Everything else already comes from it (or the .env file);
    # the values decided at run time, the database bootstrap chose (perhaps the embedded one) and
    # where the workers' metrics add up, are put there, in this parent process only, right before
    # the workers start: the one place `recloop serve` edits its environment.
    worker_environment = {"RECLOOP_DATABASE_URL": url}
    if not os.environ.get(metrics.MULTIPROC_ENV):  # a supervisor's own directory is kept
        worker_environment |= metrics.share_between_workers(settings.data_dir / "run" / "metrics")
    os.environ.update(worker_environment)
    uvicorn.run(
        "app.main:create_app_from_env",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level="warning",
    )
