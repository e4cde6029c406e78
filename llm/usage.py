"""LLM usage arithmetic: what the LLM calls of a step, round, loop or command cost, and their sums.

Plain dicts (TypedDicts), so any checkpointer serialises them and old checkpoints still load.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, NotRequired

# typing_extensions: pydantic describes these types as JSON schemas (the protocol's /schemas) only
# from its TypedDict on Python < 3.12.
from typing_extensions import TypedDict


class LLMUsage(TypedDict):
    """What the LLM calls of one step, round or loop cost (zeros for offline agents).

    Every attempt counts, failed and cut-off ones included. Token counts come from the server's
    ``usage`` where it sends one; otherwise they were counted locally (the endpoint's tokenizer,
    or an estimate) and ``counted_calls`` says how many attempts that was. Keys added after the
    first release are NotRequired: checkpoints written before them still load.
    """

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: NotRequired[int]
    """Prompt tokens the server took from its prompt cache (``prompt_tokens_details.cached_tokens``)."""
    counted_calls: NotRequired[int]
    """Attempts without server-reported usage, whose tokens were counted locally."""
    seconds: NotRequired[float]
    """Wall time spent waiting for the LLM, retries included."""


USAGE_COUNTS = ("calls", "prompt_tokens", "completion_tokens", "cached_tokens", "counted_calls")


def empty_usage() -> LLMUsage:
    return {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_tokens": 0,
        "counted_calls": 0,
        "seconds": 0.0,
    }


def add_usage(a: Mapping[str, Any], b: Mapping[str, Any]) -> LLMUsage:
    """The sum of two usages; a key missing on either side (older records) counts as zero."""
    total = empty_usage()
    for key in USAGE_COUNTS:
        total[key] = int(a.get(key, 0) or 0) + int(b.get(key, 0) or 0)  # type: ignore[literal-required]
    total["seconds"] = round(float(a.get("seconds", 0.0) or 0.0) + float(b.get("seconds", 0.0) or 0.0), 6)
    return total


def sum_usage(usages: Iterable[Mapping[str, Any] | None]) -> LLMUsage:
    """The one usage summer: rounds of a loop, loops of a run, steps of a round."""
    total = empty_usage()
    for usage in usages:
        if usage:
            total = add_usage(total, usage)
    return total


def total_usage(records: Iterable[Mapping[str, Any]], key: str = "usage") -> LLMUsage:
    """The summed usage under ``key`` of records: a loop's rounds (``llm_usage``), a run's rows."""
    return sum_usage(record.get(key) for record in records)


def format_usage(usage: Mapping[str, Any]) -> str:
    """``4 calls, 2300 prompt (1200 cached) + 310 completion tokens, 9.8 s of LLM time``."""
    line = (
        f"{usage.get('calls', 0)} calls, {usage.get('prompt_tokens', 0)} prompt "
        f"({usage.get('cached_tokens', 0)} cached) + {usage.get('completion_tokens', 0)} completion tokens, "
        f"{usage.get('seconds', 0.0):.1f} s of LLM time"
    )
    counted = usage.get("counted_calls", 0)
    return f"{line}; {counted} calls without server usage were counted locally" if counted else line


class LLMAttempt(TypedDict):
    """One attempt of one LLM call, for timings and valid-answer rates (``RoundRecord.llm_attempts``)."""

    agent: Literal["rec", "user", "parser"]
    attempt: int
    """1-based attempt number within its step (retries are 2, 3, ...)."""
    ok: bool
    """The attempt produced a usable answer."""
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    counted: Literal["server", "tokenizer", "estimate"]
    """Where the token counts come from."""
    failure: str | None
    """``kind: detail`` when the attempt failed (see llm.client.FailureKind)."""
