"""The four nodes of the loop and the routing after ``memory_update``.

One round of AFL Algorithm 1: ``recommend`` (Ir, Rr) -> ``score`` S -> ``judge``
(Du, Ru) -> ``memory_update`` (both memories get {Ir, Rr, Ru} on rejection).
Each node is one async function ``(state, runtime) -> dict`` that returns only the keys it
changes; its dependencies (models, catalog, agents, configuration) are the run's context,
``runtime.context`` (a :class:`graph.context.LoopDeps`, passed as ``ainvoke(..., context=deps)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, interrupt

from graph import describe
from graph.agents.base import RecContext, UserContext
from graph.context import LoopDeps
from graph.state import JUDGE_MODES, Judgement, LoopState, MemoryEntry, RoundRecord, Verdict, make_judgement
from llm.usage import add_usage, empty_usage
from recmodels.metrics import rank_of
from steering.preferences import Preferences, PreferenceUpdate, as_preferences, consolidate
from steering.tools import hard_violations

# The reference implementation shows the user agent the reward model's best quarter of the candidates.
TOP_PICKS_SHARE = 4


class LoopInputError(ValueError):
    """Bad loop input; the message names the field and the reason."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


class HumanFeedbackError(ValueError):
    """A human judge's resume value is not {"decision": "accept"|"reject", "reason": str}."""


def validate_loop_input(
    history: list[int], candidates: list[int], max_rounds: int, judge_mode: str, n_items: int
) -> None:
    """Raise :class:`LoopInputError` for input the loop cannot run on."""
    for name, ids in (("history", history), ("candidates", candidates)):
        for pos, item in enumerate(ids):
            if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < n_items:
                raise LoopInputError(
                    f"{name}[{pos}]", f"{item!r} is not an item id of the catalog (0..{n_items - 1})"
                )
    if not candidates:
        raise LoopInputError("candidates", "empty; the loop needs at least one candidate")
    if len(set(candidates)) != len(candidates):
        raise LoopInputError("candidates", "contains duplicates")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise LoopInputError("max_rounds", f"must be an integer >= 1, got {max_rounds!r}")
    if judge_mode not in JUDGE_MODES:
        raise LoopInputError("judge_mode", f"must be one of {JUDGE_MODES}, got {judge_mode!r}")


def is_new_loop(state: LoopState) -> bool:
    """Whether ``recommend`` runs at the start of a loop rather than after a rejected round.

    New input carries the ephemeral ``new_loop`` marker (graph.runner.loop_input sets it), which
    tells it apart from a continuation (``invoke(None)``, ``Command(resume=...)``) whatever state
    the previous loop was left in (finished, paused, abandoned mid-round). Without the marker, a
    thread whose last loop has ended (or that has none) opens one all the same.
    """
    if state.get("new_loop") or not state.get("loop_index"):
        return True
    return state.get("stop_reason") is not None


# --- recommend -------------------------------------------------------------------------------


async def recommend(state: LoopState, runtime: Runtime[LoopDeps]) -> dict[str, Any]:
    """Open the loop if this is its start, then ask the recommendation agent for a candidate (Ir, Rr)."""
    deps = runtime.context
    update = _open_loop(deps, state) if is_new_loop(state) else {}
    rounds: list[RoundRecord] = [] if "rounds" in update else list(state.get("rounds") or [])
    ctx = rec_context(deps, {**state, **update}, rounds)
    proposal = await deps.rec_agent.propose(ctx)
    if proposal["item"] not in ctx.candidates:  # agents validate too; a bug here must not leak out
        raise RuntimeError(f"recommendation agent proposed {proposal['item']}, which is not a candidate")
    return {**update, "proposal": proposal}  # stored as the agent built it (make_proposal)


def rec_context(deps: LoopDeps, view: Mapping[str, Any], rounds: Sequence[RoundRecord]) -> RecContext:
    """What the recommendation agent sees this round: ``view`` is the loop's state (with the loop's
    opening applied, when this round opens it), ``rounds`` the loop's rounds so far. The LLM
    calibration builds its validation questions with it too (lab.calibration.llm)."""
    keep = _allowed_positions(deps, view)
    candidates = [view["candidates"][i] for i in keep]
    prior = view["prior_item"] if deps.rec_agent.use_prior else None
    return RecContext(
        history=list(view["history"]),
        candidates=candidates,
        rec_scores=[view["rec_scores"][i] for i in keep],
        prior_item=prior if prior is None or prior in candidates else None,
        memory=list(view.get("rec_memory") or []),
        rejected_this_loop=[r["item"] for r in rounds if r["decision"] == "reject"],
        last_preferred=list(rounds[-1]["preferred_items"]) if rounds else [],
        round=len(rounds) + 1,
        preferences=view.get("preferences"),
        llm_budget_s=_budget_left(deps, view),
        reward_scores=[view["reward_scores"][i] for i in keep],
    )


def rec_prior_item(candidates: Sequence[int], rec_scores: Sequence[float]) -> int:
    """Im, the rec model's pick among the candidates (ties: the earlier candidate)."""
    return candidates[max(range(len(candidates)), key=lambda i: (rec_scores[i], -i))]


def _allowed_positions(deps: LoopDeps, view: Mapping[str, Any]) -> list[int]:
    """Positions of the candidates that a human judge's reasons in this loop allow (all when none
    would be left): what a reason ruled out applies to the very next proposal. (The session's own
    preferences already shaped the candidates; the user agent rejects what breaks them.)"""
    preferences = as_preferences(view.get("reason_constraints"))
    everything = list(range(len(view["candidates"])))
    if preferences is None or not preferences.has_hard():
        return everything
    candidates = view["candidates"]
    allowed = [i for i in everything if not hard_violations(preferences, deps.catalog.item(candidates[i]))]
    return allowed or everything


def _budget_left(deps: LoopDeps, state: Mapping[str, Any], spent_this_round: float = 0.0) -> float:
    """Seconds of LLM time the loop has left (its budget minus what its finished rounds and
    this round's earlier steps spent)."""
    spent = float(state.get("llm_seconds") or 0.0) + spent_this_round
    return deps.config.llm_loop_budget_s - spent


def _open_loop(deps: LoopDeps, state: LoopState) -> dict[str, Any]:
    """Validate the input, reset per-loop fields, score the candidates once for the whole loop."""
    history, candidates = list(state.get("history") or []), list(state.get("candidates") or [])
    max_rounds = state.get("max_rounds")
    max_rounds = deps.config.max_rounds if max_rounds is None else max_rounds
    judge_mode = state.get("judge_mode") or "agent"
    validate_loop_input(history, candidates, max_rounds, judge_mode, deps.catalog.n_items)
    rec_scores = deps.rec_scorer.score(history, candidates)
    reward_scores = (
        rec_scores if deps.reward_scorer is deps.rec_scorer else deps.reward_scorer.score(history, candidates)
    )
    return {
        "loop_index": (state.get("loop_index") or 0) + 1,
        "max_rounds": max_rounds,
        "judge_mode": judge_mode,
        "prior_item": rec_prior_item(candidates, rec_scores),
        "rec_scores": rec_scores,
        "reward_scores": reward_scores,
        "rounds": Overwrite([]),
        "proposal": None,
        "verdict": None,
        "judgement": None,
        "final_item": None,
        "final_reason": None,
        "stop_reason": None,
        "llm_seconds": 0.0,
        "reason_constraints": None,
    }


# --- score -----------------------------------------------------------------------------------


async def score(state: LoopState) -> dict[str, Any]:
    """The reward model's score S and rank of the proposal (scored when the loop opened)."""
    proposal = _required(state, "proposal")
    return {"verdict": reward_verdict(state["candidates"], state["reward_scores"], proposal["item"])}


def reward_verdict(candidates: Sequence[int], reward_scores: Sequence[float], item: int) -> Verdict:
    """The reward model's score S of ``item`` and its 1-based rank among the candidates."""
    index = candidates.index(item)
    return {"score": float(reward_scores[index]), "rank": rank_of(reward_scores, index)}


# --- judge -----------------------------------------------------------------------------------


async def judge(state: LoopState, runtime: Runtime[LoopDeps]) -> dict[str, Any]:
    """The user agent's decision Du and reason Ru, or a person's (``judge_mode="human"``)."""
    deps = runtime.context
    if state.get("judge_mode") == "human":
        judgement = _ask_human(deps, state)
        return {"judgement": judgement, **_steered_by_reason(state, judgement)}
    ruled_out = _constraint_rejection(deps, state)
    if ruled_out is not None:
        return {"judgement": ruled_out}
    judgement = await deps.user_agent.judge(user_context(deps, state))
    return {"judgement": judgement}  # stored as the agent built it (make_judgement)


def _constraint_rejection(deps: LoopDeps, state: LoopState) -> Judgement | None:
    """A proposal that breaks the user's hard steering constraints is rejected whatever the agent
    would say: the constraints are the user's own words, checkable without a model."""
    preferences = state.get("preferences")
    if not preferences:
        return None
    item = _required(state, "proposal")["item"]
    violations = hard_violations(preferences, deps.catalog.item(item))
    if not violations:
        return None
    name = describe.quoted(deps.catalog, item)
    return make_judgement("reject", f"{name} breaks what I asked for: {'; '.join(violations)}.")


def user_context(deps: LoopDeps, state: Mapping[str, Any]) -> UserContext:
    """What the user agent sees when it judges this round's proposal (scored: ``verdict``); the LLM
    calibration builds its validation questions with it too (lab.calibration.llm)."""
    proposal, verdict = _required(state, "proposal"), _required(state, "verdict")
    candidates = state["candidates"]
    show_picks = deps.config.reward_display == "top_picks"
    spent_on_proposal = float(proposal["usage"].get("seconds", 0.0))
    rounds = state.get("rounds") or []
    return UserContext(
        history=list(state["history"]),
        candidates=list(candidates),
        item=proposal["item"],
        rec_reason=proposal["reason"],
        reward_score=verdict["score"],
        reward_rank=verdict["rank"],
        top_picks=top_picks(candidates, state["reward_scores"]) if show_picks else [],
        memory=list(state.get("user_memory") or []),
        round=len(rounds) + 1,
        preferences=state.get("preferences"),
        llm_budget_s=_budget_left(deps, state, spent_on_proposal),
        reward_scores=list(state["reward_scores"]) if show_picks else [],
        rejected_this_loop=[r["item"] for r in rounds if r["decision"] == "reject"],
        asked_for_this_loop=[i for r in rounds for i in r["preferred_items"]],
    )


def top_picks(candidates: list[int], scores: list[float]) -> list[int]:
    """The reward model's best quarter of the candidates (at least one), best first."""
    n = max(1, round(len(candidates) / TOP_PICKS_SHARE))
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    return [candidates[i] for i in order[:n]]


def _ask_human(deps: LoopDeps, state: LoopState) -> Judgement:
    """Pause the run; the caller resumes it with Command(resume={"decision", "reason"})."""
    proposal, verdict = _required(state, "proposal"), _required(state, "verdict")
    answer = interrupt(
        {
            "loop_index": state.get("loop_index"),
            "round": len(state.get("rounds") or []) + 1,
            "item": proposal["item"],
            "item_title": describe.title(deps.catalog, proposal["item"]),
            "rec_reason": proposal["reason"],
            "reward_score": verdict["score"],
            "reward_rank": verdict["rank"],
            "expects": {"decision": "accept | reject", "reason": "str"},
        }
    )
    decision, reason = parse_human_answer(answer)
    reading = answer.get("reading") if decision == "reject" else None
    return {
        "decision": decision,
        "reason": reason,
        "preferred_items": [],
        "fallback": False,
        "usage": empty_usage(),
        "reading": reading if isinstance(reading, dict) else None,
    }


def _steered_by_reason(state: LoopState, judgement: Judgement) -> dict[str, Any]:
    """A reject reason the steering parser read ("I have seen enough sci-fi") becomes part of the
    loop's preferences: the next proposals honour it for the rest of this loop."""
    reading = judgement.get("reading")
    if not reading or not reading.get("update"):
        return {}
    update = PreferenceUpdate.model_validate(reading["update"])
    if update.is_neutral():
        return {}
    current = as_preferences(state.get("preferences")) or Preferences()
    ruled_out = as_preferences(state.get("reason_constraints")) or Preferences()
    return {
        "preferences": consolidate(current, update).model_dump(mode="json"),
        "reason_constraints": consolidate(ruled_out, update).model_dump(mode="json"),
    }


# --- memory_update ---------------------------------------------------------------------------


async def memory_update(state: LoopState, runtime: Runtime[LoopDeps]) -> dict[str, Any]:
    """Record the round; on rejection both memories get {Ir, Rr, Ru}; stop on acceptance or the limit."""
    proposal, verdict, judgement = (_required(state, k) for k in ("proposal", "verdict", "judgement"))
    item, number = proposal["item"], len(state.get("rounds") or []) + 1
    title = describe.title(runtime.context.catalog, item)
    record: RoundRecord = {
        "loop_index": state.get("loop_index") or 1,
        "round": number,
        "item": item,
        "item_title": title,
        "rec_reason": proposal["reason"],
        "reward_score": verdict["score"],
        "reward_rank": verdict["rank"],
        "decision": judgement["decision"],
        "user_reason": judgement["reason"],
        "preferred_items": list(judgement["preferred_items"]),
        "rec_fallback": proposal["fallback"],
        "user_fallback": judgement["fallback"],
        "llm_usage": add_usage(proposal["usage"], judgement["usage"]),
        "rec_fallback_cause": proposal.get("fallback_cause"),
        "user_fallback_cause": judgement.get("fallback_cause"),
        "rec_llm_usage": add_usage(proposal["usage"], {}),
        "user_llm_usage": add_usage(judgement["usage"], {}),
        "llm_attempts": [*proposal.get("attempts", []), *judgement.get("attempts", [])],
        "reason_reading": judgement.get("reading"),
    }
    if proposal.get("evidence") or judgement.get("evidence"):
        record["llm_evidence"] = {"rec": proposal.get("evidence"), "user": judgement.get("evidence")}
    spent = float(state.get("llm_seconds") or 0.0) + record["llm_usage"].get("seconds", 0.0)
    update: dict[str, Any] = {
        "rounds": [record],
        "proposal": None,
        "verdict": None,
        "judgement": None,
        "llm_seconds": round(spent, 6),
    }
    if judgement["decision"] == "accept":
        return {
            **update,
            "final_item": item,
            "final_reason": proposal["reason"],
            "stop_reason": "accepted",
        }
    entry: MemoryEntry = {
        "item": item,
        "item_title": title,
        "rec_reason": proposal["reason"],
        "user_reason": judgement["reason"],
        "preferred_items": list(judgement["preferred_items"]),
    }
    update |= {"rec_memory": [entry], "user_memory": [entry]}
    if number >= state["max_rounds"]:
        # AFL: the last proposal is the answer when the user never accepted.
        update |= {"final_item": item, "final_reason": proposal["reason"], "stop_reason": "max_rounds"}
    return update


def route_after_memory_update(state: LoopState) -> Literal["recommend", "__end__"]:
    """Stop on acceptance or at the explicit round limit; otherwise recommend again."""
    rounds = state.get("rounds") or []
    if not rounds:
        raise RuntimeError("memory_update finished without recording a round")
    last = rounds[-1]
    if last["decision"] == "accept" or last["round"] >= state["max_rounds"]:
        return END
    return "recommend"


def parse_human_answer(answer: Any) -> tuple[Literal["accept", "reject"], str]:
    if not isinstance(answer, dict):
        raise HumanFeedbackError(f"resume value must be an object, got {type(answer).__name__}")
    decision, reason = answer.get("decision"), answer.get("reason")
    if decision not in ("accept", "reject"):
        raise HumanFeedbackError(f"decision: must be 'accept' or 'reject', got {decision!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise HumanFeedbackError("reason: must be a non-empty string")
    return decision, reason.strip()


def _required(state: Mapping[str, Any], key: str) -> Any:
    value = state.get(key)
    if value is None:
        raise RuntimeError(f"state has no {key!r}: the graph reached this node out of order")
    return value
