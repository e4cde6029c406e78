"""A million sessions: p50/p99 of the read paths and of a new loop, near-empty database vs seeded.

    nice -n 10 python -m bench.scale                          # 1,000,000 sessions (minutes, GBs)
    python -m bench.scale --sessions 20000 --repeats 50 --json   # a small run

One private database: a template session runs a real loop through the app (in-process, real pools,
saver and models) and is pruned to its newest checkpoint, as retention leaves a finished session.
Then ``--baseline`` sessions are seeded and every operation is measured ("near-empty"); then the
rest, up to ``--sessions``, is seeded and everything is measured again. Seeding uses COPY (not the
API): each session gets one completed loop with the template's rounds, over ``--keys`` API keys
and 5 sessions per user; a ``--checkpointed`` fraction of them also gets a copy of the template's
checkpoint rows (their thread state), so the checkpoint tables grow too. Operations (each on
another random session of the measured key; times are the app's, through httpx's ASGI transport,
without a network):

- ``list_user``: GET /v1/sessions?user_id=U
- ``list_status_page``: GET /v1/sessions?status=idle&limit=25&offset=O (O < 1,000)
- ``list_created_after``: GET /v1/sessions?created_after=T&limit=25 (T: a random seeded instant)
- ``get_session``: GET /v1/sessions/{id} (row, thread state, usage)
- ``loop_history``: GET /v1/sessions/{id}/loops
- ``new_loop_old_session``: POST /v1/sessions/{id}/recommendations on a seeded checkpointed session
- ``ui_sessions_page``: GET /ui/ then GET /v1/sessions?limit=25 (what the UI's sessions page loads)

``--json``: one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

import psycopg

from app.services.retention import RetentionStore, prune
from app.settings import Settings
from bench.scale_common import DEFAULT_SERVER, HISTORY, echo, on_private_database, service_client
from bench.service_loadgen import percentile

HISTORY_JSON = json.dumps(HISTORY)
CHECKPOINT_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
OPERATIONS = (
    "list_user",
    "list_status_page",
    "list_created_after",
    "get_session",
    "loop_history",
    "new_loop_old_session",
    "ui_sessions_page",
)


class Seeder:
    """COPYs sessions, each with one loop (the template's) and its rounds, and for some the template's
    checkpoint rows under the session's thread id."""

    def __init__(
        self, url: str, template_session: uuid.UUID, keys: list[int], checkpointed: float, seed: int
    ):
        self.url, self.keys, self.checkpointed = url, keys, checkpointed
        self.rng = random.Random(seed)
        self.epoch = datetime.now(UTC) - timedelta(days=365)
        self.seeded = 0
        self.measured: list[tuple[uuid.UUID, str, datetime, bool]] = []  # key 0's: id, user, created, ckpt
        with psycopg.connect(url) as conn:
            self.loop_cols, self.loop = self._template(conn, "loops", "session_id", template_session)
            loop_id = self.loop[0][self.loop_cols.index("id")]
            self.round_cols, self.rounds = self._template(conn, "rounds", "loop_id", loop_id)
            self.ckpt = {
                table: self._template(conn, f"langgraph.{table}", "thread_id", str(template_session))
                for table in CHECKPOINT_TABLES
            }

    @staticmethod
    def _template(conn, table: str, column: str, value) -> tuple[list[str], list[tuple]]:
        cur = conn.execute(f"SELECT * FROM {table} WHERE {column} = %s", (value,))
        return [d.name for d in cur.description], [tuple(map(_adapt, row)) for row in cur.fetchall()]

    def seed(self, n: int) -> float:
        """Seed ``n`` more sessions; returns the seconds it took (COPY, then ANALYZE)."""
        started = time.perf_counter()
        with psycopg.connect(self.url) as conn:  # the measured loops took ids since the last batch
            self.next_loop = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM loops").fetchone()[0]
            self.next_round = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM rounds").fetchone()[0]
        sessions, loops, rounds, ckpt_threads = [], [], [], []
        per_key_users = max(1, (self.seeded + n) // (5 * len(self.keys)))
        for i in range(self.seeded, self.seeded + n):
            session_id = uuid.uuid4()
            key = self.keys[i % len(self.keys)]
            user = f"user-{key}-{self.rng.randrange(per_key_users)}"
            created = self.epoch + timedelta(seconds=i * 30)
            has_ckpt = self.rng.random() < self.checkpointed
            sessions.append(
                (
                    session_id,
                    key,
                    user,
                    "movielens",
                    str(session_id),
                    "idle",
                    HISTORY_JSON,
                    1,
                    created,
                    created,
                )
            )
            loop_id = self.next_loop
            self.next_loop += 1
            loops.append(self._row(self.loop_cols, self.loop[0], id=loop_id, session_id=session_id,
                                   started_at=created, finished_at=created))  # fmt: skip
            for template in self.rounds:
                rounds.append(self._row(self.round_cols, template, id=self.next_round, loop_id=loop_id,
                                        created_at=created))  # fmt: skip
                self.next_round += 1
            if has_ckpt:
                ckpt_threads.append(str(session_id))
            if key == self.keys[0]:
                self.measured.append((session_id, user, created, has_ckpt))
        columns = (
            "id, owner_key_id, user_id, dataset, thread_id, status, history, n_loops, created_at, updated_at"
        )
        with psycopg.connect(self.url) as conn, conn.cursor() as cur:
            self._copy(cur, "sessions", columns.split(", "), sessions)
            self._copy(cur, "loops", self.loop_cols, loops)
            self._copy(cur, "rounds", self.round_cols, rounds)
            for table, (cols, template_rows) in self.ckpt.items():
                thread = cols.index("thread_id")
                rows = (
                    tuple(t if j != thread else thread_id for j, t in enumerate(row))
                    for thread_id in ckpt_threads
                    for row in template_rows
                )
                self._copy(cur, f"langgraph.{table}", cols, rows)
            cur.execute("SELECT setval(pg_get_serial_sequence('loops', 'id'), %s)", (self.next_loop,))
            cur.execute("SELECT setval(pg_get_serial_sequence('rounds', 'id'), %s)", (self.next_round,))
        self.seeded += n
        return time.perf_counter() - started

    def settle(self) -> float:
        """VACUUM (ANALYZE) the seeded tables, as autovacuum would soon: statistics for the planner
        and the visibility map for index-only scans. Returns the seconds it took."""
        started = time.perf_counter()
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE) sessions, loops, rounds")
            for table in CHECKPOINT_TABLES:
                conn.execute(f"VACUUM (ANALYZE) langgraph.{table}")
        return time.perf_counter() - started

    @staticmethod
    def _row(columns: list[str], template: tuple, **values) -> tuple:
        return tuple(values.get(c, v) for c, v in zip(columns, template, strict=True))

    @staticmethod
    def _copy(cur, table: str, columns: list[str], rows) -> None:
        with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _adapt(value):
    # JSON as text, serialised once per template value: COPY's text format hands it to jsonb as is.
    return json.dumps(value) if isinstance(value, dict | list) else value


async def _measure(client, seeder: Seeder, repeats: int, rng: random.Random) -> dict[str, dict]:
    olds = [m for m in seeder.measured if m[3]] or seeder.measured
    times: dict[str, list[float]] = {op: [] for op in OPERATIONS}

    async def timed(op: str, *requests) -> None:
        started = time.perf_counter()
        for method, path, kwargs in requests:
            response = await client.request(method, path, **kwargs)
            assert response.status_code < 300, (op, response.status_code, response.text[:300])
        times[op].append((time.perf_counter() - started) * 1000)

    used = set()
    for _ in range(repeats):
        sid, user, created, _ = rng.choice(seeder.measured)
        await timed("list_user", ("GET", "/v1/sessions", {"params": {"user_id": user}}))
        page = {"status": "idle", "limit": 25, "offset": rng.randrange(min(1000, len(seeder.measured)))}
        await timed("list_status_page", ("GET", "/v1/sessions", {"params": page}))
        after = {"created_after": created.isoformat(), "limit": 25}
        await timed("list_created_after", ("GET", "/v1/sessions", {"params": after}))
        await timed("get_session", ("GET", f"/v1/sessions/{sid}", {}))
        await timed("loop_history", ("GET", f"/v1/sessions/{sid}/loops", {}))
        old = rng.choice([o for o in olds if o[0] not in used] or olds)[0]
        used.add(old)
        await timed("new_loop_old_session", ("POST", f"/v1/sessions/{old}/recommendations", {"json": {}}))
        await timed(
            "ui_sessions_page", ("GET", "/ui/", {}), ("GET", "/v1/sessions", {"params": {"limit": 25}})
        )
    return {
        op: {
            "p50_ms": round(statistics.median(v), 2),
            "p99_ms": round(percentile(sorted(v), 0.99), 2),
            "n": len(v),
        }
        for op, v in times.items()
    }


async def _run(args: argparse.Namespace, url: str, settings: Settings) -> dict:
    async with service_client(settings, url) as (client, worker):
        template = await client.post("/v1/sessions", json={"user_id": "template", "history": HISTORY})
        template.raise_for_status()
        template_id = uuid.UUID(template.json()["id"])
        (await client.post(f"/v1/sessions/{template_id}/recommendations", json={})).raise_for_status()
        store = RetentionStore(
            worker.database.sessionmaker, worker.runner.saver, worker.database.locks, "langgraph"
        )
        # A finished session as retention keeps it: its newest checkpoint only.
        await prune(store, settings.model_copy(update={"checkpoint_history_days": 0.0}),
                    now=datetime.now(UTC) + timedelta(seconds=5))  # fmt: skip
        with psycopg.connect(url, autocommit=True) as conn:
            owner = conn.execute(
                "SELECT owner_key_id FROM sessions WHERE id = %s", (template_id,)
            ).fetchone()[0]
            others = [
                conn.execute(
                    "INSERT INTO api_keys (owner, prefix, key_hash) VALUES (%s, 'seed', %s) RETURNING id",
                    (f"seed-{k}", uuid.uuid4().hex + uuid.uuid4().hex),
                ).fetchone()[0]
                for k in range(args.keys - 1)
            ]
        seeder = Seeder(url, template_id, [owner, *others], args.checkpointed, args.seed)
        rng = random.Random(args.seed)
        baseline_n = min(args.baseline, args.sessions)
        echo(f"seeding {baseline_n:,} sessions (near-empty) ...")
        seed_s = seeder.seed(baseline_n) + seeder.settle()
        await _measure(client, seeder, min(10, args.repeats), rng)  # warm caches and pools
        near_empty = await _measure(client, seeder, args.repeats, rng)
        rest = args.sessions - baseline_n
        batch = 100_000
        while rest > 0:
            n = min(batch, rest)
            seed_s += seeder.seed(n)
            rest -= n
            echo(f"  seeded {seeder.seeded:,} sessions ({seed_s:.0f} s)")
        seed_s += seeder.settle()
        await _measure(client, seeder, min(10, args.repeats), rng)
        seeded = await _measure(client, seeder, args.repeats, rng)
        with psycopg.connect(url) as conn:
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    ratios = {op: round(seeded[op]["p99_ms"] / near_empty[op]["p99_ms"], 2) for op in OPERATIONS}
    return {
        "sessions": seeder.seeded,
        "baseline_sessions": baseline_n,
        "keys": args.keys,
        "measured_key_sessions": len(seeder.measured),
        "checkpointed_fraction": args.checkpointed,
        "repeats": args.repeats,
        "seed_seconds": round(seed_s, 1),
        "database_bytes": int(size),
        "near_empty": near_empty,
        "seeded": seeded,
        "p99_ratio": ratios,
        "all_p99_within_2x": all(r <= 2.0 for r in ratios.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_SERVER, help="A server to create a database on.")
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--baseline", type=int, default=1000, help="Sessions of the near-empty database.")
    parser.add_argument("--keys", type=int, default=10, help="API keys the sessions are spread over.")
    parser.add_argument("--checkpointed", type=float, default=0.1, help="Fraction with checkpoint rows.")
    parser.add_argument("--repeats", type=int, default=200, help="Measurements per operation and phase.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="Keep the database (its URL is printed).")
    parser.add_argument("--json", action="store_true", help="Print one JSON object last.")
    args = parser.parse_args()
    result = on_private_database(args.database_url, partial(_run, args), keep=args.keep)
    echo(f"{result['sessions']:,} sessions ({result['database_bytes'] / 2**30:.2f} GiB), p50/p99 ms:")
    for op in OPERATIONS:
        a, b = result["near_empty"][op], result["seeded"][op]
        echo(f"  {op:22s} {a['p50_ms']:8.2f} {a['p99_ms']:8.2f}  ->  {b['p50_ms']:8.2f} {b['p99_ms']:8.2f}"
             f"   p99 x{result['p99_ratio'][op]}")  # fmt: skip
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
