"""The wheel installs beside another project's top-level `graph` and `app` without breaking either.

Builds recloop's wheel from the files the Dockerfile copies, installs it with `--no-deps` into a
fresh venv together with a tiny unrelated project that has top-level `graph` and `app` packages
(in both orders), then checks each side from that venv: a plain Python process imports the other
project's `graph`/`app` and recloop's client; the `recloop` command, and a spawned process like
uvicorn's workers, import recloop's own server packages and never the other project's.

No network and no reinstall of the dependencies: the fresh venv sees the dev venv's site-packages
through a `.pth` line. A directory named in a `.pth` file is only appended to sys.path (its own
`.pth` files are not run), so the editable install of recloop in the dev venv (a finder started by
`__editable__.recloop-*.pth`) stays invisible there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from app.ui import STATIC_DIR

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
OTHER_PACKAGES = ("graph", "app")


def _run(args: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


def _build_stage_sources() -> list[str]:
    """What the Dockerfile's build stage copies before `pip install .`: what a wheel is built from."""
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    build_stage = lines[: max(i for i, line in enumerate(lines) if line.startswith("FROM "))]
    sources = []
    for line in build_stage:
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--") for w in words):
            sources += words[1:-1]
    return sources


def _write_other_project(where: Path) -> Path:
    """An unrelated project with top-level `graph` and `app`; importing either is logged to the file
    in $OTHER_IMPORT_LOG (when set), so a test sees if recloop's server ever imported it."""
    for name in OTHER_PACKAGES:
        package = where / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            textwrap.dedent(f"""\
                import os

                OTHER = {name!r}
                if os.environ.get("OTHER_IMPORT_LOG"):
                    with open(os.environ["OTHER_IMPORT_LOG"], "a") as log:
                        log.write(__name__ + "\\n")
                """)
        )
    (where / "pyproject.toml").write_text(
        textwrap.dedent("""\
            [build-system]
            requires = ["setuptools"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "other-project"
            version = "1.0"

            [tool.setuptools]
            packages = ["graph", "app"]
            """)
    )
    return where


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """recloop's wheel (from a copy of the Dockerfile's sources: no stale build/ of the checkout
    can leak into it) and the other project's."""
    tmp = tmp_path_factory.mktemp("wheels")
    source = tmp / "recloop-src"
    source.mkdir()
    for name in _build_stage_sources():
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name)
    other = _write_other_project(tmp / "other-src")
    dist = tmp / "dist"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    _run([*pip_wheel, "-w", dist, source, other])
    found = {wheel.name.split("-")[0]: wheel for wheel in dist.glob("*.whl")}
    assert set(found) == {"recloop", "other_project"}, found
    return found


def _site_packages(python: Path) -> Path:
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(_run([python, "-c", where]).stdout.strip())


def _fresh_venv(where: Path) -> Path:
    """A venv of the base interpreter that sees the dev venv's installed dependencies (not recloop)."""
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", "--without-pip", where])
    python = where / "bin" / "python"
    (_site_packages(python) / "dev-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(params=["recloop-first", "other-first"])
def venv(request, wheels, tmp_path: Path) -> Path:
    python = _fresh_venv(tmp_path / "venv")
    order = ["recloop", "other_project"] if request.param == "recloop-first" else ["other_project", "recloop"]
    for name in order:  # two installs, so that the second may overwrite the first's files
        _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheels[name]])
    return python


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RECLOOP_"))}
    return env | {"OTHER_IMPORT_LOG": str(tmp_path / "other-imports.log"), "RECLOOP_DATA_DIR": str(tmp_path)}


def test_recloop_and_another_project_with_top_level_graph_and_app_both_work(venv: Path, tmp_path: Path):
    # cwd: a directory without the checkout, whose own `app`/`graph` would otherwise be found.
    run = {"cwd": tmp_path, "env": _env(tmp_path)}
    log = tmp_path / "other-imports.log"

    # A plain Python process of the venv: the other project's packages, and recloop's client.
    other = _run([venv, "-c", "import graph, app; print(graph.OTHER, app.OTHER)"], **run)
    assert other.stdout.split() == ["graph", "app"]
    client = (
        "import json, sys, recloop\nrecloop.Client, recloop.AsyncClient\nprint(json.dumps([*sys.modules]))"
    )
    imported = set(json.loads(_run([venv, "-c", client], **run).stdout))
    server_packages = {
        "cli",
        "app",
        "lab",
        "graph",
        "steering",
        "llm",
        "recmodels",
        "postgres",
        "migrations",
    }
    assert not server_packages & imported  # the client imports no server
    log.unlink(missing_ok=True)

    # The `recloop` command imports its own server (cli imports graph.*, recmodels.*, torch).
    version = _run([venv.parent / "recloop", "--version"], **run)
    assert version.stdout.strip() == "recloop 0.1.0"
    assert not log.exists(), log.read_text()

    # Where the server's packages and alembic.ini are, and a spawned process (as uvicorn starts its
    # workers when serving with several) importing the server by name, as uvicorn's import string does.
    check = textwrap.dedent("""\
        import importlib, json, multiprocessing, sys
        import recloop._server
        recloop._server.use_server_packages()
        import app.db.migrate, graph
        spawn = multiprocessing.get_context("spawn")
        child = spawn.Process(target=importlib.import_module, args=("app.settings",))
        child.start()
        child.join()
        print(json.dumps({"graph": graph.__file__, "alembic_ini": str(app.db.migrate.ALEMBIC_INI),
                          "migrations": str(app.db.migrate.MIGRATIONS_DIR), "child": child.exitcode}))
        """)
    server = json.loads(_run([venv, "-c", check], **run).stdout)
    site = _site_packages(venv)
    private = site / "recloop" / "_server"
    assert Path(server["graph"]) == private / "graph" / "__init__.py"
    assert server["child"] == 0
    assert not log.exists(), log.read_text()
    assert (Path(server["migrations"]) / "env.py").is_file()
    # The Dockerfile puts alembic.ini where app/db/migrate.py looks for it.
    alembic_ini = Path(server["alembic_ini"]).relative_to(site)
    assert f"site-packages/{alembic_ini}" in (ROOT / "Dockerfile").read_text()


def test_the_wheel_carries_the_ui_and_the_migrations_under_the_private_directory(wheels):
    names = set(zipfile.ZipFile(wheels["recloop"]).namelist())
    ui = {
        f"recloop/_server/app/ui/{p.relative_to(STATIC_DIR.parent).as_posix()}"
        for p in STATIC_DIR.rglob("*")
        if p.is_file()
    }
    assert ui and ui <= names, sorted(ui - names)
    assert "recloop/_server/migrations/env.py" in names
    top_level = {"cli", "app", "lab", "graph", "recmodels", "migrations"}
    assert not {n for n in names if n.split("/")[0] in top_level}
