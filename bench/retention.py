"""Checkpoint bytes per completed loop, before and after retention (`recloop db prune`'s policy).

    python -m bench.retention                    # 20 sessions x 3 loops, in-process, private database
    python -m bench.retention --sessions 5 --loops 2 --json

Runs real loops (offline agents, the durable saver) through the app in-process against a fresh
database, measures the checkpoint tables (live row bytes, rows; and on-disk bytes after VACUUM
FULL), prunes with checkpoint_history_days=0 (the policy a week after the last loop) and measures
again. ``--json``: one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
from functools import partial

import psycopg

from app.db import retention as retention_repo
from app.services.retention import RetentionStore, prune
from app.settings import Settings
from bench.scale_common import DEFAULT_SERVER, HISTORY, echo, on_private_database, service_client


def _disk_bytes(url: str, schema: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        total = 0
        for table in retention_repo.CHECKPOINT_TABLES:
            conn.execute(f'VACUUM FULL "{schema}".{table}')
            total += conn.execute(f"SELECT pg_total_relation_size('\"{schema}\".{table}')").fetchone()[0]
        return int(total)


async def _run(args: argparse.Namespace, url: str, settings: Settings) -> dict:
    async with service_client(settings, url) as (client, worker):
        rounds = 0
        for s in range(args.sessions):
            history = HISTORY[s % len(HISTORY) :] + HISTORY[: s % len(HISTORY)]
            created = await client.post("/v1/sessions", json={"user_id": f"u{s}", "history": history})
            created.raise_for_status()
            for _ in range(args.loops):
                ran = await client.post(
                    f"/v1/sessions/{created.json()['id']}/recommendations",
                    json={"max_rounds": args.max_rounds},
                )
                ran.raise_for_status()
                rounds += len(ran.json()["rounds"])
        loops = args.sessions * args.loops
        store = RetentionStore(
            worker.database.sessionmaker,
            worker.runner.saver,
            worker.database.locks,
            settings.checkpoint_schema,
        )
        disk_before = _disk_bytes(url, settings.checkpoint_schema)
        pruned = await prune(store, settings.model_copy(update={"checkpoint_history_days": 0.0}))
        disk_after = _disk_bytes(url, settings.checkpoint_schema)
        # The pruned sessions still work: one more loop on each of the first few.
        listed = (await client.get("/v1/sessions", params={"limit": 5})).json()["data"]
        for session in listed:
            again = await client.post(f"/v1/sessions/{session['id']}/recommendations", json={})
            again.raise_for_status()

    def per_loop(storage: dict) -> dict:
        return {
            "bytes": round(sum(t["bytes"] for t in storage.values()) / loops),
            "rows": round(sum(t["rows"] for t in storage.values()) / loops, 1),
        }

    before, after = per_loop(pruned.storage_before), per_loop(pruned.storage_after)
    return {
        "sessions": args.sessions,
        "loops_per_session": args.loops,
        "rounds_per_loop": round(rounds / loops, 2),
        "before": {**before, "disk_bytes": round(disk_before / loops)},
        "after": {**after, "disk_bytes": round(disk_after / loops)},
        "reduction": round(1 - after["bytes"] / before["bytes"], 3),
        "sessions_pruned": pruned.sessions_pruned,
        "new_loops_after_prune_ok": len(listed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_SERVER, help="A server to create a database on.")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--loops", type=int, default=3, help="Loops per session.")
    parser.add_argument("--max-rounds", type=int, default=4)
    parser.add_argument("--json", action="store_true", help="Print one JSON object last.")
    args = parser.parse_args()
    result = on_private_database(args.database_url, partial(_run, args))
    echo(
        f"per completed loop ({result['rounds_per_loop']} rounds): {result['before']['bytes']:,} B in "
        f"{result['before']['rows']} rows -> {result['after']['bytes']:,} B in "
        f"{result['after']['rows']} rows "
        f"({result['reduction']:.0%} less); on disk {result['before']['disk_bytes']:,} -> "
        f"{result['after']['disk_bytes']:,} B"
    )
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
