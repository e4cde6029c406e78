"""Shared fixtures: the paper's data (where it can be had), synthetic data, an isolated data directory.

Two kinds of data, on purpose (issue 46):

- *synthetic* (``synthetic_dataset``): made by the tests themselves with `recloop data build
  synthetic`; for every test that needs some sequential data and no particular title. Always there.
- *the paper's files* (``ml_dataset``, ``lastfm_dataset``, ``shared_data``): obtained the way a user
  obtains them. ``RECLOOP_SHARED_DATA=DIR`` names a copy of the LLaRA files (``DIR/movielens``,
  ``DIR/lastfm``, ``DIR/steam``; CI passes one); without it MovieLens-100k is fetched once with
  `recloop data fetch movielens` (GroupLens, else the RecBole wheel on PyPI) into the test cache
  (``RECLOOP_TEST_CACHE``, default ``.cache/tests`` in the checkout). What cannot be had is skipped
  with a reason that names the command that gets it. Such tests carry the ``paper_data`` marker and
  the run ends with a count of them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from app.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
# A preparing `recloop serve` trains the learned steering parser in a background process (minutes
# of both cores, outliving the server); no test's server may start one unless the test asks for it.
os.environ.setdefault("RECLOOP_STEERING_PARSER_TRAIN_ON_SERVE", "false")
_SHARED = os.environ.get("RECLOOP_SHARED_DATA")
SHARED_DATA = Path(_SHARED) if _SHARED else None
TEST_CACHE = Path(os.environ.get("RECLOOP_TEST_CACHE", REPO_ROOT / ".cache" / "tests"))
# Fixtures that hand a test the paper's files: a test that uses one is a paper-data test.
PAPER_FIXTURES = frozenset({"shared_data", "ml_dataset", "lastfm_dataset", "movielens_raw"})
SHARED_HINT = (
    "RECLOOP_SHARED_DATA=DIR, a copy of LLaRA's files (DIR/movielens, DIR/lastfm, DIR/steam; CI passes one)"
)
HOW_TO_GET = {
    "movielens": "`recloop data fetch movielens` (GroupLens, else the RecBole wheel on PyPI)",
    "lastfm": f"`RECLOOP_DATA_DIR={TEST_CACHE} recloop data fetch lastfm --from-dir DIR` "
    "(DIR: LLaRA's LastFM files)",
}


def _no_paper_files(what: str) -> None:
    if what in HOW_TO_GET:
        pytest.skip(f"needs the paper's {what} data: {HOW_TO_GET[what]}, or {SHARED_HINT}")
    pytest.skip(f"needs {what} as published: {SHARED_HINT}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if PAPER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.paper_data)


_paper_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "paper_data" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _paper_outcomes[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter) -> None:
    if not _paper_outcomes:
        return
    outcomes = list(_paper_outcomes.values())
    ran = sum(outcome != "skipped" for outcome in outcomes)
    source = f"RECLOOP_SHARED_DATA={SHARED_DATA}" if SHARED_DATA else f"test cache {TEST_CACHE}"
    terminalreporter.write_line(
        f"paper-data tests: {ran} ran ({outcomes.count('passed')} passed), "
        f"{outcomes.count('skipped')} skipped; data from {source}"
    )


@pytest.fixture
def one_torch_thread():
    """torch with one intra-op thread, as a worker runs it (app/services/runtime.py): a test of
    exact floats must not depend on which earlier test set the count. Two threads split a product
    where they like, and the rows at the split are walked apart (different last bits)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The LLaRA files as published (RECLOOP_SHARED_DATA), or a skip naming how to get them."""
    if SHARED_DATA is None or not SHARED_DATA.is_dir():
        _no_paper_files("LLaRA's files")
    return SHARED_DATA


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", _env_file=None)


@pytest.fixture(scope="session")
def session_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir for settings built without one (the loop caches text item vectors under it)."""
    return tmp_path_factory.mktemp("data")


# --- datasets (session-scoped) --------------------------------------------------------------


@pytest.fixture(scope="session")
def datasets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session datasets directory; `ml_dataset` and `lastfm_dataset` are imported into it."""
    return tmp_path_factory.mktemp("datasets")


# A small synthetic catalog: MovieLens genre names and years, power-law popularity, repeats.
SYNTHETIC_SPEC = {"items": 400, "users": 300, "interactions": 9000, "seed": 7}


@pytest.fixture(scope="session")
def synthetic_dataset(tmp_path_factory: pytest.TempPathFactory):
    """A synthetic dataset made here (`recloop data build synthetic`); treat as read-only."""
    from lab.data.synthetic import SyntheticSpec, build_synthetic

    return build_synthetic(tmp_path_factory.mktemp("synthetic"), "synthetic", SyntheticSpec(**SYNTHETIC_SPEC))


def _cached_paper_dataset(name: str):
    """``name`` from the test cache: built there before, or (MovieLens) fetched now as a user would."""
    from lab.data.fetch import FetchError, fetch_movielens
    from recmodels.dataset import Dataset, DatasetNotFound

    cache = Settings(data_dir=TEST_CACHE, _env_file=None)
    try:
        return Dataset.open(cache.datasets_dir, name)
    except DatasetNotFound:
        if name != "movielens":
            _no_paper_files(name)
    try:
        return fetch_movielens(cache, name, echo=lambda message: None)
    except (FetchError, OSError) as exc:
        if (cache.datasets_dir / name / "meta.json").is_file():  # another test run built it meanwhile
            return Dataset.open(cache.datasets_dir, name)
        pytest.skip(
            f"MovieLens-100k could not be fetched ({exc}): {HOW_TO_GET['movielens']}, or {SHARED_HINT}"
        )


def _paper_dataset(name: str, datasets_dir: Path):
    from lab.data.importer import import_llara

    if SHARED_DATA is not None and (SHARED_DATA / name).is_dir():
        return import_llara(SHARED_DATA / name, datasets_dir, name)
    from recmodels.dataset import Dataset

    # A copy: a test that writes into its dataset by mistake must not change the cache.
    shutil.copytree(_cached_paper_dataset(name).root, datasets_dir / name)
    return Dataset.open(datasets_dir, name)


@pytest.fixture(scope="session")
def ml_dataset(datasets_dir: Path):
    """MovieLens-100k (LLaRA protocol) with genres/year item attributes; treat as read-only.

    The LLaRA files when RECLOOP_SHARED_DATA names them, else `recloop data fetch movielens` (the
    same splits, byte for byte; from the RecBole wheel ``year`` is the title's year)."""
    return _paper_dataset("movielens", datasets_dir)


@pytest.fixture(scope="session")
def movielens_raw(ml_dataset) -> Path:
    """A directory with GroupLens' ml-100k u.data and u.item: LLaRA's copy (RECLOOP_SHARED_DATA) or the
    one `recloop data fetch movielens` left in the test cache (u.data identical; u.item from RecBole
    carries the title's year as the release date)."""
    if SHARED_DATA is not None and (SHARED_DATA / "movielens" / "raw").is_dir():
        return SHARED_DATA / "movielens" / "raw"
    return TEST_CACHE / "downloads" / "ml-100k"


@pytest.fixture(scope="session")
def lastfm_dataset(datasets_dir: Path):
    """LastFM (LLaRA protocol, titles only); treat as read-only."""
    return _paper_dataset("lastfm", datasets_dir)


# --- models (session-scoped: tiny real models trained once on a MovieLens slice) ----------


@pytest.fixture(scope="session")
def ml_models_dir(ml_dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session models dir holding sasrec/gru4rec/caser at artifact_path(dir, "movielens", name).

    Trained on the first 3,000 MovieLens training rows for 2 epochs: real models, seconds to build,
    far from converged (use the artifacts in data/models for quality measurements).
    """
    from recmodels.names import ID_MODEL_NAMES
    from recmodels.training import train

    models_dir = tmp_path_factory.mktemp("models")
    for name in ID_MODEL_NAMES:  # textrec has its own tests (tests/test_models_textrec.py)
        train(ml_dataset, name, models_dir=models_dir, epochs=2, max_train_rows=3000, progress=False)
    return models_dir


@pytest.fixture(scope="session")
def ml_scorers(ml_dataset, ml_models_dir: Path) -> dict:
    """dict model name -> Scorer, loaded through the real artifact path (fingerprint-checked)."""
    from recmodels.artifacts import load_latest_scorer
    from recmodels.names import ID_MODEL_NAMES

    return {name: load_latest_scorer(ml_models_dir, ml_dataset, name) for name in ID_MODEL_NAMES}


# --- service database (a fresh, migrated PostgreSQL database per test run) -----------------


def _postgres_reachable(url: str) -> bool:
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


@pytest.fixture(scope="session")
def pg_server_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PostgreSQL server to create test databases on.

    RECLOOP_TEST_DATABASE_URL (default: the CI server at 127.0.0.1:5432), else an embedded one
    started for this run through the same code path `recloop serve` uses.
    """
    url = os.environ.get("RECLOOP_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
    if _postgres_reachable(url):
        return url
    from postgres.embedded import start_embedded_postgres

    return start_embedded_postgres(tmp_path_factory.mktemp("pg") / "pgdata")


@pytest.fixture(scope="session")
def make_database(pg_server_url: str):
    """Factory: a new, empty, uniquely named database; every one is dropped at the end of the run."""
    import uuid

    import psycopg
    from psycopg import sql

    from postgres.urls import with_database

    created: list[str] = []

    def make() -> str:
        name = f"recloop_test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created.append(name)
        return with_database(pg_server_url, name)

    yield make
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        for name in created:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def service_db_url(make_database) -> str:
    """One migrated database (Alembic + LangGraph's checkpoint schema) shared by the API tests."""
    from app.db.migrate import migrate_all

    url = make_database()
    migrate_all(url, "langgraph")
    return url


# --- the HTTP service in-process (tiny real models, the migrated test database) ------------


@pytest.fixture(scope="session")
def service_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # The contract test sends ~1,400 requests a minute on one key: no rate limit unless a test sets one.
    return Settings(
        data_dir=tmp_path_factory.mktemp("service"),
        _env_file=None,
        lock_pool_size=30,
        rate_limit_per_minute=0,
    )


@pytest.fixture(scope="session")
def service_loop_deps(service_settings: Settings, ml_dataset, ml_scorers) -> dict:
    """Offline agents over the tiny trained SASRec (rec and reward model), as `recloop serve` wires them."""
    import asyncio

    from lab.calibration.deps import calibrated_deps

    scorer = ml_scorers["sasrec"]
    deps = calibrated_deps(service_settings.loop_config(), ml_dataset, scorer, scorer, "offline")
    return {"offline": asyncio.run(deps)}


@pytest.fixture
async def service_worker(service_settings: Settings, service_db_url: str, ml_dataset, service_loop_deps):
    from app.services.runtime import open_worker

    async with open_worker(
        service_settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=service_loop_deps
    ) as worker:
        yield worker


@pytest.fixture
async def make_api_client(service_settings: Settings, service_worker):
    """Factory: an httpx client on the app (in-process ASGI) authenticated with a new key of ``owner``."""
    import httpx

    from app.main import create_app
    from tests.api_client import authed_client

    app = create_app(service_settings, worker=service_worker)
    clients: list[httpx.AsyncClient] = []

    async def make(owner: str = "tester") -> httpx.AsyncClient:
        client = await authed_client(service_settings, service_worker, owner, app=app)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture
async def api(make_api_client):
    return await make_api_client("owner-a")


def _held(monkeypatch, agent_class: type, method: str):
    """``agent_class.method`` waits for the returned event before it answers."""
    import asyncio

    release = asyncio.Event()
    answer = getattr(agent_class, method)

    async def held(self, ctx):
        await release.wait()
        return await answer(self, ctx)

    monkeypatch.setattr(agent_class, method, held)
    return release


@pytest.fixture
def held_rec_agent(monkeypatch):
    """The recommendation agent waits for the returned event: a loop held mid-run until it is set."""
    from graph.agents.offline import OfflineRecAgent

    release = _held(monkeypatch, OfflineRecAgent, "propose")
    yield release
    release.set()


@pytest.fixture
def held_judge(monkeypatch):
    """The user agent waits for the returned event: a loop held after its proposal was scored."""
    from graph.agents.offline import OfflineUserAgent

    release = _held(monkeypatch, OfflineUserAgent, "judge")
    yield release
    release.set()


@pytest.fixture
async def served(service_settings, service_worker):
    """The app behind a real uvicorn server on 127.0.0.1 (a free port), and a client with a new key."""
    import asyncio

    import httpx
    import uvicorn

    from app.main import create_app
    from app.services.keys import create_key

    server = uvicorn.Server(
        uvicorn.Config(create_app(service_settings, worker=service_worker), port=0, log_level="warning")
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]  # port 0: the OS picked a free one
    key = await create_key(service_worker.database.sessionmaker, owner="served")
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key.secret}"}, timeout=30
    ) as client:
        yield client
    server.should_exit = True
    await serving


# --- LLM (a local OpenAI-compatible server; see tests/fake_openai.py) ---------------------------


@pytest.fixture
def fake_openai():
    """A started FakeOpenAI server on 127.0.0.1 (random port): enqueue replies, read `.requests`."""
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server


# --- CLI runs on the session's datasets and tiny models ---------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch):
    """An empty RECLOOP_DATA_DIR for CLI runs (the settings cache cleared before and after)."""
    from app.settings import get_settings

    monkeypatch.setenv("RECLOOP_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield tmp_path / "data"
    get_settings.cache_clear()


@pytest.fixture
def cli_env(ml_dataset, data_dir: Path) -> Path:
    """RECLOOP_DATA_DIR for CLI training tests: datasets/movielens is the session dataset (a
    symlink), models/ starts empty."""
    (data_dir / "datasets").mkdir(parents=True)
    (data_dir / "datasets" / "movielens").symlink_to(ml_dataset.root, target_is_directory=True)
    return data_dir


@pytest.fixture
def cli_data_dir(tmp_path: Path, datasets_dir: Path, ml_models_dir: Path, ml_dataset, monkeypatch) -> Path:
    """RECLOOP_DATA_DIR for CLI tests: datasets/ and models/ are the session fixtures' (symlinks),
    no LLM endpoint; runs and other outputs go under it."""
    from app.settings import get_settings

    root = tmp_path / "data"
    root.mkdir()
    (root / "datasets").symlink_to(datasets_dir)
    (root / "models").symlink_to(ml_models_dir)
    monkeypatch.setenv("RECLOOP_DATA_DIR", str(root))
    monkeypatch.delenv("RECLOOP_LLM_BASE_URL", raising=False)
    get_settings.cache_clear()
    yield root
    get_settings.cache_clear()


# --- evaluation runs on disk (what the run browser reads) ------------------------------------

EXAMPLE_RUN = REPO_ROOT / "docs" / "eval-report" / "table4-lastfm"


@pytest.fixture
def write_eval_run():
    """Factory: a run directory as `recloop eval table4` leaves it (report.md and the plot from the
    committed example report, plus config.json, results.json and rows.jsonl); ``report`` replaces
    report.md."""

    def write(runs_dir: Path, name: str, *, report: str | None = None) -> Path:
        run = runs_dir / name
        shutil.copytree(EXAMPLE_RUN, run)
        config = {"experiment": "table4", "dataset": "lastfm", "agents": "offline", "max_rounds": 4}
        (run / "config.json").write_text(json.dumps(config))
        results = {"experiment": "table4", "config": config, "code_version": "abc1234", "rows": []}
        (run / "results.json").write_text(json.dumps({**results, "finished_at": "2026-11-30T10:15:00+00:00"}))
        (run / "rows.jsonl").write_text('{"key": "sasrec/seed0/0"}\n')
        if report is not None:
            (run / "report.md").write_text(report)
        return run

    return write


@pytest.fixture
async def sdk(served, service_worker):
    """A langgraph-sdk client of a new owner, and a factory for more owners."""
    from langgraph_sdk import get_client

    from app.services.keys import create_key

    clients = []

    async def client_of(owner: str):
        key = await create_key(service_worker.database.sessionmaker, owner=owner)
        client = get_client(url=str(served.base_url), api_key=key.secret)
        client.recloop_key = key.secret  # for the same owner's /v1 calls
        clients.append(client)
        return client

    yield client_of
    for client in clients:
        await client.aclose()
