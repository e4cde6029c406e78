"""A loop as a readable transcript: items by title, reasons, decisions, scores."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from graph import describe
from graph.runner import LoopResult
from llm.usage import format_usage
from recmodels.dataset import Dataset

WIDTH = 100
INDENT = "    "


def _wrapped(label: str, text: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=f"  {label:<14}", subsequent_indent=" " * 16)


def format_transcript(
    catalog: Dataset,
    result: LoopResult,
    history: Sequence[int],
    candidates: Sequence[int],
    target: int | None = None,
) -> str:
    lines = [f"History ({len(history)} items, oldest first):"]
    lines += [f"{INDENT}{describe.label(catalog, i)}" for i in history]
    lines.append(
        f"Candidates: {len(candidates)}; the rec model's pick (prior): {_name(catalog, result.prior_item)}"
    )
    for r in result.rounds:
        lines.append("")
        lines.append(f"Round {r['round']}")
        fallback = _fallback(r.get("rec_fallback"), r.get("rec_fallback_cause"))
        lines.append(_wrapped("Recommends:", f"{describe.label(catalog, r['item'])} [{r['item']}]{fallback}"))
        lines.append(_wrapped("Because:", r["rec_reason"]))
        lines.append(
            _wrapped(
                "Reward model:",
                f"score {r['reward_score']:.3f}, rank {r['reward_rank']} of {len(candidates)}",
            )
        )
        verdict = "ACCEPTS" if r["decision"] == "accept" else "REJECTS"
        fallback = _fallback(r.get("user_fallback"), r.get("user_fallback_cause"))
        lines.append(_wrapped("User:", f"{verdict}: {r['user_reason']}{fallback}"))
        if r["llm_usage"]["calls"]:
            lines.append(_wrapped("LLM:", format_usage(r["llm_usage"])))
    lines.append("")
    if result.usage["calls"]:
        lines.append(f"LLM in total: {format_usage(result.usage)}")
    stop = "accepted" if result.stop_reason == "accepted" else "round limit reached"
    lines.append(f"Final: {_name(catalog, result.final_item)} ({stop} after {result.n_rounds} round(s))")
    if target is not None:
        lines.append(
            f"Target: {_name(catalog, target)}: loop {_hit(result.final_item, target)}, "
            f"rec model alone {_hit(result.prior_item, target)}"
        )
    return "\n".join(lines)


def _fallback(fallback: bool | None, cause: str | None) -> str:
    if not fallback:
        return ""
    return f"  [offline fallback: {cause}]" if cause else "  [offline fallback]"


def _name(catalog: Dataset, item: int | None) -> str:
    return "(none)" if item is None else f"{describe.label(catalog, item)} [{item}]"


def _hit(item: int | None, target: int) -> str:
    return "hit" if item == target else "miss"
