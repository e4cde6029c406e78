"""The LLM command parser: structured output from any OpenAI-compatible endpoint.

It uses the agents' machinery (``graph.agents.llm``): the same ChatOpenAI settings, the same
bounded retry that feeds errors back, and the same rule that after the last retry a
deterministic component answers -- here :class:`OfflineParser`, marked ``fallback=True``.
The model names titles, never ids; titles and genres are resolved against the catalog, and
a name that does not resolve is an error fed back (the model may then move it to
``not_understood``), never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError

from llm.client import LLMClient, StructuredCaller
from llm.config import LLMConfig
from steering import prompts
from steering.catalog_index import Catalog, CatalogIndex
from steering.parsing import CommandParser, ParseResult
from steering.preferences import (
    Preferences,
    PreferenceUpdate,
    Side,
    SoftPreference,
    YearRange,
    describe,
)
from steering.rule_parser import OfflineParser

THOUGHTS_MAX_CHARS = 200  # the parser needs little reasoning; every token is latency
PHRASE_MAX_CHARS = 100
LIST_MAX_ITEMS = 8
# Bounds sent in the schema (grammar-constrained servers enforce them); not validated here.
Phrase = Annotated[str, Field(json_schema_extra={"maxLength": PHRASE_MAX_CHARS})]


def _phrases(description: str) -> Any:
    return Field(description=description, json_schema_extra={"maxItems": LIST_MAX_ITEMS})


class CommandSide(BaseModel):
    """One side of a command as the LLM states it (titles, not ids)."""

    genres: list[Phrase] = _phrases("Catalog genre names, exactly as listed.")
    year_start: int | None = Field(description="First release year, or null.")
    year_end: int | None = Field(description="Last release year, or null.")
    titles: list[Phrase] = _phrases("Exact catalog titles as hard constraints (e.g. items to exclude).")
    like_titles: list[Phrase] = _phrases("Catalog titles the user compares to ('like Toy Story').")
    soft: list[Phrase] = _phrases("Other soft wishes in a few words ('lighter', 'slow-paced').")


class CommandAnswer(BaseModel):
    """The parser's structured answer for one command."""

    thoughts: str = Field(description="Brief reasoning.", json_schema_extra={"maxLength": THOUGHTS_MAX_CHARS})
    reset: bool = Field(description="The user asks to forget all earlier preferences.")
    positive: CommandSide = Field(description="What the user now wants.")
    negative: CommandSide = Field(description="What the user now does not want.")
    lift: CommandSide = Field(description="Earlier constraints the user takes back, without the opposite.")
    not_understood: list[Phrase] = _phrases("Parts of the command you could not map, verbatim.")


class LLMParser(CommandParser):
    name = "llm"

    def __init__(
        self, catalog: Catalog | CatalogIndex, llm: LLMConfig, *, caller: StructuredCaller | None = None
    ):
        self.index = catalog if isinstance(catalog, CatalogIndex) else CatalogIndex(catalog)
        self.fallback = OfflineParser(self.index)
        client = LLMClient.from_config(llm)
        self.caller = caller or client.caller(CommandAnswer, llm.max_tokens_parser, "parser")

    async def parse(
        self, text: str, *, memory: Preferences, recommendations: Sequence[int] = ()
    ) -> ParseResult:
        prefer = set(recommendations)
        outcome = await self.caller.acall(
            self.messages(text, memory, recommendations), lambda answer: self._problem(answer, prefer)
        )
        if outcome.answer is None:
            result = await self.fallback.parse(text, memory=memory, recommendations=recommendations)
            return result.model_copy(
                update={
                    "fallback": True,
                    "parser": self.name,
                    "fallback_cause": outcome.cause,
                    "usage": outcome.usage,
                }
            )
        update = self._to_update(outcome.answer, prefer)
        unparsed = [f"'{part}': not understood" for part in outcome.answer.not_understood]
        return ParseResult(update=update, unparsed=unparsed, parser=self.name, usage=outcome.usage)

    def without_calls(self) -> CommandParser:
        return self.fallback

    def messages(self, text: str, memory: Preferences, recommendations: Sequence[int]) -> list[BaseMessage]:
        genres = ", ".join(self.index.genres) or "(this catalog has no genres: never use genre constraints)"
        shown = "; ".join(self.index.titles(list(recommendations)[:20])) or "(none yet)"
        return [
            SystemMessage(prompts.PARSER_SYSTEM.format(genres=genres)),
            HumanMessage(
                prompts.PARSER_USER.format(
                    memory=describe(memory), recommendations=shown, command=text.strip()
                )
            ),
        ]

    def _problem(self, answer: CommandAnswer, prefer: set[int]) -> str | None:
        """Why the answer cannot be used, for the model to correct; None when it is usable."""
        try:
            self._to_update(answer, prefer)
        except (LookupError, ValidationError, ValueError) as exc:
            return str(exc)
        return None

    def _to_update(self, answer: CommandAnswer, prefer: set[int]) -> PreferenceUpdate:
        return PreferenceUpdate(
            reset=answer.reset,
            positive=self._side(answer.positive, prefer, "positive"),
            negative=self._side(answer.negative, prefer, "negative"),
            lift=self._side(answer.lift, prefer, "lift"),
        )

    def _side(self, side: CommandSide, prefer: set[int], label: str) -> Side:
        genres = []
        for name in side.genres:
            genre = self.index.canonical_genre(name)
            if genre is None:
                raise LookupError(f"{label}.genres: {name!r} is not a catalog genre")
            genres.append(genre)
        year_range = None
        if side.year_start is not None or side.year_end is not None:
            year_range = YearRange(start=side.year_start, end=side.year_end)
        items = [i for title in side.titles for i in self._ids(title, f"{label}.titles")]
        soft = [SoftPreference(text=t) for t in side.soft if t.strip()]
        for title in side.like_titles:
            self._ids(title, f"{label}.like_titles")
            item = self.index.resolve_title(title, prefer)
            soft.append(SoftPreference(text=self.index.catalog.item(item).title, item=item))
        return Side(genres=genres, year_range=year_range, items=items, soft=soft)

    def _ids(self, title: str, field: str) -> list[int]:
        ids = self.index.ids_for_title(title)
        if not ids:
            raise LookupError(
                f"{field}: {title!r} is not a catalog title; use an exact title or put it in not_understood"
            )
        return ids
