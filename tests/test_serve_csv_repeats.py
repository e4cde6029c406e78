"""Every catalog `recloop data build csv` accepts is served (issue 45): a log with repeat consumption,
a catalog so small that some histories leave fewer than 19 items outside them, items nobody
consumed and users with one interaction. Built, trained and served by the commands a user runs;
a recommendation and a steering command over real HTTP, on the real PostgreSQL."""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from recmodels.candidates import negative_pool_size
from recmodels.dataset import Dataset
from recmodels.evaluation import N_CANDIDATES

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[1]
N_ITEMS = 22  # a window of 10 distinct items leaves fewer than 19 outside it
UNCONSUMED = 3  # the last items: nobody consumes them
WORDS = ("Harbor", "Lantern", "Orchard", "Meadow", "Cinder", "Willow")


def _title(item: int) -> str:
    return f"{WORDS[item % len(WORDS)]} {WORDS[(item // len(WORDS)) % len(WORDS)]} {item}"


def _write_csv(directory: Path) -> tuple[Path, Path]:
    rng = random.Random(0)
    items = directory / "items.csv"
    items.write_text("item,title,genre\n" + "".join(f"i{i},{_title(i)},g{i % 3}\n" for i in range(N_ITEMS)))
    lines, clock = ["user,item,timestamp"], 0
    for user in range(120):
        history: list[int] = []
        for _ in range(1 if user % 10 == 0 else rng.randint(3, 28)):
            clock += 1
            repeat = history and rng.random() < 0.3
            history.append(rng.choice(history) if repeat else rng.randrange(N_ITEMS - UNCONSUMED))
            lines.append(f"u{user},i{history[-1]},{clock}")
    interactions = directory / "interactions.csv"
    interactions.write_text("\n".join(lines) + "\n")
    return interactions, items


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _recloop(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _wait_key(server: subprocess.Popen) -> str:
    """The API key the first start prints with its banner, once the server answers."""
    assert server.stdout is not None
    deadline = time.monotonic() + 240
    for line in server.stdout:
        found = re.search(r"API key \(shown once, store it now\): (rl_\S+)", line)
        if found:
            return found.group(1)
        assert time.monotonic() < deadline, line
    pytest.fail(f"recloop serve ended (exit {server.wait()}) without a key")


def test_a_csv_log_with_repeats_and_a_small_catalog_is_served_and_steered(tmp_path: Path, make_database):
    interactions, items = _write_csv(tmp_path)
    data_dir = tmp_path / "data"
    env = {
        **os.environ,
        "RECLOOP_DATA_DIR": str(data_dir),
        "RECLOOP_DATABASE_URL": make_database(),
        "RECLOOP_DATASET": "mine",
        "RECLOOP_STEERING_WARMUP": "false",
    }
    env.pop("RECLOOP_LLM_BASE_URL", None)
    _recloop(
        env,
        "data",
        "build",
        "csv",
        "--interactions",
        str(interactions),
        "--items",
        str(items),
        "--name",
        "mine",
    )
    dataset = Dataset.open(data_dir / "datasets", "mine")
    val = dataset.rows("val")
    # The log has what the issue names: repeats, pools below 19 negatives, unconsumed items.
    assert any(r.next in r.history for r in [*val, *dataset.rows("test"), *dataset.rows("train")])
    assert any(
        negative_pool_size(r.history, r.next, N_ITEMS) < N_CANDIDATES - 1
        for r in [*val, *dataset.rows("test"), *dataset.rows("train")]
    )
    _recloop(env, "train", "--dataset", "mine", "--model", "sasrec", "--epochs", "2")
    evaluated = _recloop(env, "eval", "model", "--dataset", "mine", "--model", "sasrec", "--json")
    assert 0.0 <= json.loads(evaluated.stdout.strip().splitlines()[-1])["hr1_mean"] <= 1.0

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        key = _wait_key(server)
        assert httpx.get(f"{base}/readyz", timeout=10).status_code == 200
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as api:
            history = next(list(r.history) for r in val if len(set(r.history)) < len(r.history))
            created = api.post("/v1/sessions", json={"user_id": "u1", "history": history})
            assert created.status_code == 201, created.text
            sid = created.json()["id"]

            run = api.post(f"/v1/sessions/{sid}/recommendations", json={})
            assert run.status_code == 200, run.text
            item = run.json()["item"]["id"]
            assert 0 <= item < N_ITEMS and item not in history

            liked = next(i for i in range(N_ITEMS) if i not in history)
            command = api.post(f"/v1/sessions/{sid}/commands", json={"text": f"more like {_title(liked)}"})
            assert command.status_code == 200, command.text
            body = command.json()
            assert body["understood"], body
            assert body["preferences"]["positive"]["soft"][0]["item"] == liked
            recs = [r["id"] for r in body["recommendations"]]
            assert recs and not set(recs) & set(history)
    finally:
        server.terminate()
        server.wait(timeout=60)
