"""A fresh clone's first start as a newcomer meets it (issue 43): `make serve` in a checkout with nothing
prepared, the time to the first recommendation, then a steering command every few seconds until the
learned parser (trained in the background) answers, counting every command that failed.

    git clone REPO /tmp/fresh/recloop
    python -m bench.first_start --clone /tmp/fresh/recloop [--port 8765] [--every 3] [--json]

Times are seconds from `make serve` (the venv, the embedded PostgreSQL, MovieLens' fetch and the
models included). The server is stopped at the end (its process group gets SIGTERM, and so does the
parser's trainer if it is still at work); its output is kept in CLONE/first_start.log. The last line
with --json is one JSON object: serving_s, first_recommendation_s, learned_s, learned_after_serving_s,
commands, failed, parsers (how many commands each parser read), announced (the expected_ready_at
values the rules' answers carried, first and last, with the time each was said), readyz_steering.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

COMMANDS = (
    "no horror please",
    "something from the 90s",
    "I've had enough of Star Wars",
    "surprise me with a 70s thriller",
    "more comedies, nothing too long ago",
    "reset my preferences",
)
KEY_LINE = re.compile(r"API key \(shown once, store it now\): (\S+)")


class Server:
    """`make serve` in the clone, its output read line by line into a log and watched for the key."""

    def __init__(self, clone: Path, port: int) -> None:
        self.started = time.monotonic()
        self.clone = clone
        self.key: str | None = None
        self.serving_s: float | None = None
        self.log = (clone / "first_start.log").open("w")
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECLOOP_") and k != "VIRTUAL_ENV"}
        env |= {"RECLOOP_PORT": str(port)}
        self.process = subprocess.Popen(  # noqa: S603 -- make, in the clone
            ["make", "serve"], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.write(f"{time.monotonic() - self.started:8.1f}  {line}")
            self.log.flush()
            found = KEY_LINE.search(line)
            if found:
                self.key = found.group(1)
            if "recloop serving" in line and self.serving_s is None:
                self.serving_s = round(time.monotonic() - self.started, 1)

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def stop(self) -> None:
        """Stop the server, and the parser's trainer if it is still at work: it runs in a session of
        its own (it outlives a server stopped mid-training, for the next start to find), and would
        load the machine under the next measurement."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        for status in (self.clone / "data" / "run").glob("parser-*.json"):
            try:
                record = json.loads(status.read_text())
                if record.get("state") == "training":
                    os.killpg(int(record["pid"]), signal.SIGTERM)
            except (OSError, ValueError, KeyError):
                pass
        self.log.close()


def call(base: str, key: str | None, method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        base + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 -- our own server
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        return 0, str(error)


def measure(clone: Path, port: int, every_s: float, timeout_s: float, after: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    server = Server(clone, port)
    result: dict[str, Any] = {"serving_s": None, "first_recommendation_s": None, "learned_s": None}
    try:
        while server.serving_s is None or server.key is None:
            if server.process.poll() is not None or server.elapsed() > timeout_s:
                raise SystemExit(f"make serve ended or timed out before serving; see {server.log.name}")
            time.sleep(0.5)
        result["serving_s"] = server.serving_s
        status, session = call(
            base, server.key, "POST", "/v1/sessions", {"user_id": "newcomer", "history": [1]}
        )
        if status != 201 and status != 200:
            raise SystemExit(f"creating a session answered {status}: {session}")
        sid = session["id"]
        status, loop = call(base, server.key, "POST", f"/v1/sessions/{sid}/recommendations", {})
        if status != 200:
            raise SystemExit(f"the first recommendation answered {status}: {loop}")
        result["first_recommendation_s"] = server.elapsed()
        parsers: Counter[str] = Counter()
        failures: list[dict[str, Any]] = []
        announced: list[dict[str, Any]] = []
        n = learned_seen = 0
        while learned_seen < after and server.elapsed() < timeout_s:
            status, answer = call(
                base,
                server.key,
                "POST",
                f"/v1/sessions/{sid}/commands",
                {"text": COMMANDS[n % len(COMMANDS)]},
            )
            n += 1
            if status != 200:
                failures.append({"at_s": server.elapsed(), "status": status, "body": str(answer)[:300]})
            else:
                parsers[answer["parser"]] += 1
                due = (answer.get("parser_status") or {}).get("expected_ready_at")
                if due and (not announced or announced[-1]["expected_ready_at"] != due):
                    announced.append({"at_s": server.elapsed(), "expected_ready_at": due})
                if answer["parser"] == "learned":
                    learned_seen += 1
                    if result["learned_s"] is None:
                        result["learned_s"] = server.elapsed()
            time.sleep(every_s)
        status, ready = call(base, None, "GET", "/readyz")
        steering = (ready.get("details") or {}).get("steering") if isinstance(ready, dict) else ready
        result |= {
            "learned_after_serving_s": (
                round(result["learned_s"] - result["serving_s"], 1) if result["learned_s"] else None
            ),
            "commands": n, "failed": len(failures), "failures": failures[:10], "parsers": dict(parsers),
            "announced": announced[:1] + announced[-1:] if len(announced) > 1 else announced,
            "readyz_steering": steering,
        }  # fmt: skip
        return result
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", type=Path, required=True, help="A fresh clone (nothing prepared).")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--every", type=float, default=3.0, help="Seconds between steering commands.")
    parser.add_argument(
        "--after", type=int, default=5, help="Commands read by the learned parser, then stop."
    )
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--json", action="store_true", help="End with one JSON object.")
    args = parser.parse_args()
    result = measure(args.clone.resolve(), args.port, args.every, args.timeout, args.after)
    if not args.json:
        for key, value in result.items():
            print(f"{key:28} {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
