"""The README's curl walk-through runs as written against a real server (uvicorn, PostgreSQL)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

import pytest

from app.services.keys import create_key

pytestmark = pytest.mark.integration

README = Path(__file__).parents[1] / "README.md"


def _walkthrough() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### A first session with curl") :]
    return re.search(r"```bash\n(.*?)```", section, re.DOTALL)[1]


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
async def test_the_readme_curl_walkthrough_runs(served, service_worker):
    key = await create_key(service_worker.database.sessionmaker, owner="readme")
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-euo",
        "pipefail",
        "-c",
        _walkthrough(),
        env={**os.environ, "RECLOOP_URL": str(served.base_url), "RECLOOP_API_KEY": key.secret},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output = (await process.communicate())[0].decode()
    assert process.returncode == 0, output
    lines = output.splitlines()
    assert len(lines) == 7, output  # one answer per call after the session's creation
    assert lines[1] == "[49, 180, 257, 293, 0, 171, 5]"  # the consumed item joined the history
    assert lines[4] == "completed"  # the human-judged loop finished after the feedback
    assert lines[5] == "2" and lines[6] == "idle"  # two loops, nothing running or pending


async def test_the_readme_python_client_snippet_runs(served, service_worker, monkeypatch, capsys):
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### The Python client") :]
    snippet = re.search(r"```python\n(.*?)```", section, re.DOTALL)[1]
    key = await create_key(service_worker.database.sessionmaker, owner="readme-client")
    monkeypatch.setenv("RECLOOP_URL", str(served.base_url))
    monkeypatch.setenv("RECLOOP_API_KEY", key.secret)
    # The sync client in a thread: the server runs on this event loop.
    await asyncio.to_thread(exec, compile(snippet, str(README), "exec"), {"__name__": "snippet"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[1:5] == ["update recommend", "update score", "interrupt __interrupt__", "result None"]
    assert printed[-1] == "422 max_rounds"
