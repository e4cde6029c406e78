"""/v1/graph, a session's /checkpoints and a loop's /candidates over HTTP, on the real saver."""

from __future__ import annotations

import pytest

from graph.builder import NODE_NAMES

pytestmark = pytest.mark.integration

HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]


async def _session_with_loop(api, max_rounds: int = 3) -> str:
    created = await api.post("/v1/sessions", json={"user_id": "u", "history": HISTORY})
    session_id = created.json()["id"]
    body = {"candidates": CANDIDATES, "max_rounds": max_rounds}
    assert (await api.post(f"/v1/sessions/{session_id}/recommendations", json=body)).status_code == 200
    return session_id


async def test_the_graph_is_the_compiled_one(api):
    response = await api.get("/v1/graph")
    assert response.status_code == 200
    body = response.json()
    assert body["nodes"] == ["__start__", *NODE_NAMES, "__end__"]
    routed = {(e["source"], e["target"]) for e in body["edges"] if e["conditional"]}
    assert routed == {("memory_update", "recommend"), ("memory_update", "__end__")}
    assert {(e["source"], e["target"]) for e in body["edges"] if not e["conditional"]} == {
        ("__start__", "recommend"), ("recommend", "score"), ("score", "judge"), ("judge", "memory_update"),
    }  # fmt: skip
    assert "memory_update" in body["mermaid"] and "-.->" in body["mermaid"]  # Mermaid's dashed edge


async def test_checkpoints_follow_the_loop_step_by_step(api):
    session_id = await _session_with_loop(api)
    loop = (await api.get(f"/v1/sessions/{session_id}/loops")).json()["data"][0]
    response = await api.get(f"/v1/sessions/{session_id}/checkpoints", params={"limit": 200})
    assert response.status_code == 200
    data = response.json()["data"]
    assert response.json()["count"] == len(data)
    assert [c["step"] for c in data] == list(range(data[0]["step"], data[0]["step"] - len(data), -1))
    newest, oldest = data[0], data[-1]
    assert newest["next"] == [] and newest["nodes"] == ["memory_update"]
    assert newest["state"]["final_item"] == loop["final_item"] and newest["state"]["loop_index"] == 1
    assert newest["state"]["stop_reason"] == loop["stop_reason"]
    assert oldest["source"] == "input" and oldest["nodes"] == [] and oldest["next"] == ["__start__"]
    judged = [c for c in data if c["nodes"] == ["judge"]]
    assert len(judged) == len(loop["rounds"])  # one judge checkpoint per round, with its decision
    assert [c["state"]["decision"] for c in reversed(judged)] == [r["decision"] for r in loop["rounds"]]
    limited = (await api.get(f"/v1/sessions/{session_id}/checkpoints", params={"limit": 2})).json()
    assert [c["step"] for c in limited["data"]] == [c["step"] for c in data[:2]]
    assert limited["data"][1]["nodes"] == data[1]["nodes"]  # named from the one read beyond the page


async def test_a_loops_candidates_carry_both_models_scores_and_ranks(api, service_loop_deps):
    session_id = await _session_with_loop(api)
    loop = (await api.get(f"/v1/sessions/{session_id}/loops")).json()["data"][0]
    response = await api.get(f"/v1/sessions/{session_id}/loops/1/candidates")
    assert response.status_code == 200
    body = response.json()
    deps = service_loop_deps["offline"]
    rec = deps.rec_scorer.score(HISTORY, CANDIDATES)
    assert [c["item"] for c in body["data"]] == CANDIDATES
    assert [c["rec_score"] for c in body["data"]] == pytest.approx(rec)
    assert sorted(c["rec_rank"] for c in body["data"])[0] == 1
    best = max(range(len(rec)), key=lambda i: rec[i])
    assert body["data"][best]["rec_rank"] == 1
    assert body["proposals"] == [r["item"] for r in loop["rounds"]]
    assert [c["item"] for c in body["data"] if c["final"]] == [loop["final_item"]]
    assert not any(c["consumed_later"] for c in body["data"])
    other = next(c for c in CANDIDATES if c != loop["final_item"])
    await api.post(f"/v1/sessions/{session_id}/consumed", json={"items": [other]})
    again = (await api.get(f"/v1/sessions/{session_id}/loops/1/candidates")).json()
    assert [c["item"] for c in again["data"] if c["consumed_later"]] == [other]


async def test_missing_loops_foreign_sessions_and_bad_numbers_are_clear_errors(api, make_api_client):
    session_id = await _session_with_loop(api, max_rounds=1)
    missing = await api.get(f"/v1/sessions/{session_id}/loops/2/candidates")
    assert missing.status_code == 404 and missing.json()["field"] == "loop_index"
    stranger = await make_api_client("owner-b")
    for path in ("checkpoints", "loops/1/candidates"):
        foreign = await stranger.get(f"/v1/sessions/{session_id}/{path}")
        assert foreign.status_code == 404 and foreign.json()["field"] == "session_id"
    bad = await api.get(f"/v1/sessions/{session_id}/loops/0/candidates")
    assert bad.status_code == 422 and "loop_index" in bad.text
    too_many = await api.get(f"/v1/sessions/{session_id}/checkpoints", params={"limit": 201})
    assert too_many.status_code == 422 and "limit" in too_many.text
