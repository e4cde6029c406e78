"""LangGraph's JavaScript client (@langchain/langgraph-sdk, the versions tests/langgraph_js/package-lock.json
pins) against a real server on PostgreSQL: node runs docs/langgraph.md's JavaScript snippet as it is.

node and npm come from the machine; `.ci/run` installs Debian's if it has none and sets
RECLOOP_REQUIRE_NODE=1, which makes a missing or too old node fail this test instead of skipping it
(as RECLOOP_UI_REQUIRE_BROWSER does for chromium). `npm ci` fetches the locked packages from the npm
registry once; node_modules/ stays out of git.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from app.services.keys import create_key

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).with_name("langgraph_js")
DOC = Path(__file__).parents[1] / "docs" / "langgraph.md"
NODE_MAJOR = 20
"""@langchain/langgraph-sdk's dependencies (p-queue 9, @langchain/core 1) declare node >= 20."""


def _missing(why: str) -> None:
    if os.environ.get("RECLOOP_REQUIRE_NODE") == "1":
        pytest.fail(f"{why} (RECLOOP_REQUIRE_NODE=1)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def node() -> str:
    """The node binary, with the locked packages installed under tests/langgraph_js/node_modules."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _missing("node and npm are needed to run LangGraph's JavaScript client")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < NODE_MAJOR:
        _missing(f"node {version} is older than {NODE_MAJOR}, which @langchain/langgraph-sdk needs")
    lock = hashlib.sha256((PROJECT / "package-lock.json").read_bytes()).hexdigest()
    marker = PROJECT / "node_modules" / ".recloop-lock"
    if not marker.is_file() or marker.read_text() != lock:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=PROJECT, capture_output=True, text=True, timeout=900
        )
        if done.returncode != 0:
            _missing(f"npm ci failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        marker.write_text(lock)
    return node


def _snippet() -> str:
    [snippet] = re.findall(r"```js\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    return snippet


async def test_the_javascript_snippet_of_the_langgraph_docs_runs(node, served, service_worker, tmp_path):
    script = tmp_path / "snippet.mjs"
    script.write_text(_snippet(), encoding="utf-8")
    (tmp_path / "node_modules").symlink_to(PROJECT / "node_modules", target_is_directory=True)
    key = await create_key(service_worker.database.sessionmaker, owner=f"js-{uuid.uuid4().hex[:8]}")
    process = await asyncio.create_subprocess_exec(
        node,
        str(script),
        cwd=tmp_path,
        env={**os.environ, "RECLOOP_URL": str(served.base_url), "RECLOOP_API_KEY": key.secret},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output = (await asyncio.wait_for(process.communicate(), timeout=300))[0].decode(errors="replace")
    print(output)
    assert process.returncode == 0, output
    lines = output.splitlines()
    assert lines[0] == "assistants: recloop, recloop-human"
    assert [line for line in lines if line.startswith("node ")][:4] == [
        "node recommend",
        "node score",
        "node judge",
        "node memory_update",
    ]
    assert any(line.startswith("judge item ") for line in lines)
    assert lines[-1].startswith("deleted ")
    thread_id = lines[-1].split()[-1]
    missing = await served.get(f"/threads/{thread_id}", headers={"x-api-key": key.secret})
    assert missing.status_code == 404  # the snippet's last call deleted its thread


def test_the_lockfile_pins_the_sdk_the_docs_name():
    package = (PROJECT / "package.json").read_text()
    lock = (PROJECT / "package-lock.json").read_text()
    version = re.search(r'"@langchain/langgraph-sdk": "(\d+\.\d+\.\d+)"', package)
    assert version, "package.json pins an exact version"
    assert f'"node_modules/@langchain/langgraph-sdk": {{\n      "version": "{version[1]}"' in lock
    assert f"@langchain/langgraph-sdk` {version[1]}" in DOC.read_text(encoding="utf-8")
