"""An LLM as the simulator's second teacher: it rewrites simulated commands the way people type.

The simulator knows what each command means but writes from templates; an LLM writes more
freely but may change the meaning ("no horror" rewritten as "more horror, please"). A rewrite
is therefore kept only when two checks agree with the simulator's label:

1. the LLM itself, asked afresh through the LLM command parser to read the rewrite (a separate
   call that never sees the original), gives back exactly the simulator's update;
2. the mention look-up finds in the new words what the label names, so each span's role can be
   derived for the student (:func:`lab.steering.natural_labels.label_command`).

A weak model then contributes little, but what it contributes is right. Answers are cached per
endpoint, model and command (``teacher-*.jsonl`` in the cache directory), so a second training
run makes no calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from app.settings import Settings
from lab.steering.natural_labels import label_command
from lab.steering.scoring import score_command
from lab.steering.simulator import SimulatedCommand
from llm.client import LLMClient, StructuredCaller
from llm.usage import sum_usage
from steering.catalog_index import CatalogIndex
from steering.llm_parser import LLMParser
from steering.mentions import MentionFinder
from steering.preferences import Preferences

PARAPHRASE_MAX_CHARS = 200

PARAPHRASE_SYSTEM = """You help test a {kind} recommender's command box. Rewrite the user's command \
the way a different person would type it: other words, another sentence shape, maybe a hedge, slang \
or an indirect wish. Keep the meaning exactly: the same {things}, the same era, and the same \
direction for each (what is wanted stays wanted, what is refused stays refused). Do not add or drop \
anything. Answer with only a JSON object: \
{{"thoughts": "<brief>", "paraphrase": "<the rewritten command>"}}."""


class ParaphraseAnswer(BaseModel):
    thoughts: str = Field(description="Brief reasoning.", json_schema_extra={"maxLength": 160})
    paraphrase: str = Field(
        description="The rewritten command.", json_schema_extra={"maxLength": PARAPHRASE_MAX_CHARS}
    )


@dataclass
class TeacherReport:
    asked: int = 0
    """Simulated commands given to the LLM to rewrite."""
    rewritten: int = 0
    """... that came back as a usable rewrite (not empty, not the same text)."""
    read_back: int = 0
    """Rewrites the LLM parser read back exactly as the simulator's label."""
    kept: int = 0
    """... whose label the look-up also rebuilds from the new words: what the student learns from."""
    cached: int = 0
    """Commands answered from the cache (no call)."""
    usage: dict[str, float] = field(default_factory=dict)


def teacher_cache_path(cache_dir: Path, settings: Settings, commands: Sequence[SimulatedCommand]) -> Path:
    key = hashlib.sha256(
        json.dumps([str(settings.llm_base_url), settings.llm_model, [c.text for c in commands]]).encode()
    ).hexdigest()[:16]
    return Path(cache_dir) / f"teacher-{key}.jsonl"


class LLMTeacher:
    """Rewrites commands with the configured endpoint and keeps the rewrites that pass both checks."""

    def __init__(
        self,
        index: CatalogIndex,
        settings: Settings,
        finder: MentionFinder,
        *,
        caller: StructuredCaller | None = None,
        reader: LLMParser | None = None,
    ):
        self.index, self.finder = index, finder
        client = LLMClient.from_config(settings.llm_config())
        self.caller = caller or client.caller(ParaphraseAnswer, settings.llm_max_tokens_parser, "parser")
        self.reader = reader or LLMParser(index, settings.llm_config())
        music = not index.genres
        self.system = PARAPHRASE_SYSTEM.format(
            kind="music" if music else "movie",
            things="artists and styles" if music else "titles, genres",
        )

    async def rewrite(self, command: SimulatedCommand) -> tuple[str | None, bool, list]:
        """(the rewrite or None, whether the LLM read it back as the label, usages of both calls)."""
        outcome = await self.caller.acall(
            [SystemMessage(self.system), HumanMessage(f"Command: {command.text}")], _usable(command.text)
        )
        usages = [outcome.usage]
        if outcome.answer is None:
            return None, False, usages
        text = outcome.answer.paraphrase.strip()
        read = await self.reader.parse(text, memory=Preferences())
        usages.append(read.usage)
        agreed = not read.fallback and score_command(command.expected, read.update).exact
        return text, agreed, usages

    def keep(self, command: SimulatedCommand, rewrite: str | None, agreed: bool) -> SimulatedCommand | None:
        if rewrite is None or not agreed:
            return None
        return label_command(rewrite, command.expected, self.finder, self.index)

    async def teach(
        self,
        commands: Sequence[SimulatedCommand],
        *,
        cache: Path | None = None,
        concurrency: int = 2,
        on_command: Callable[[], None] | None = None,
    ) -> tuple[list[SimulatedCommand], TeacherReport]:
        report = TeacherReport(asked=len(commands))
        answers = _read_cache(cache)
        report.cached = sum(c.text in answers for c in commands)
        gate = asyncio.Semaphore(concurrency)
        usages: list = []

        async def one(command: SimulatedCommand) -> None:
            if command.text not in answers:
                async with gate:
                    rewrite, agreed, spent = await self.rewrite(command)
                usages.extend(spent)
                answers[command.text] = (rewrite, agreed)
                _append_cache(cache, command.text, rewrite, agreed)
            if on_command is not None:
                on_command()

        await asyncio.gather(*(one(c) for c in commands))
        kept = []
        for command in commands:
            rewrite, agreed = answers[command.text]
            report.rewritten += rewrite is not None
            report.read_back += agreed
            taught = self.keep(command, rewrite, agreed)
            if taught is not None:
                kept.append(taught)
        report.kept = len(kept)
        report.usage = dict(sum_usage(usages))
        return kept, report


def _usable(original: str) -> Callable[[ParaphraseAnswer], str | None]:
    def problem(answer: ParaphraseAnswer) -> str | None:
        text = answer.paraphrase.strip()
        if not text:
            return "paraphrase: empty; write the rewritten command"
        if text.casefold() == original.strip().casefold():
            return "paraphrase: the same as the command; use other words"
        return None

    return problem


def _read_cache(path: Path | None) -> dict[str, tuple[str | None, bool]]:
    if path is None or not path.is_file():
        return {}
    answers = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            answers[row["source"]] = (row["rewrite"], bool(row["agreed"]))
    return answers


def _append_cache(path: Path | None, source: str, rewrite: str | None, agreed: bool) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"source": source, "rewrite": rewrite, "agreed": agreed}) + "\n")
