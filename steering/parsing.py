"""What every command parser implements and returns: :class:`CommandParser` and :class:`ParseResult`.

The parsers: the rule parser (:mod:`steering.rule_parser`), the LLM parser (:mod:`steering.llm_parser`)
and the learned parser (:mod:`steering.learned_parser`); :mod:`steering.choice` picks one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from llm.usage import empty_usage
from steering.preferences import Preferences, PreferenceUpdate


class ParseResult(BaseModel):
    """A parsed command: the update to apply and what could not be understood."""

    update: PreferenceUpdate = Field(default_factory=PreferenceUpdate)
    unparsed: list[str] = Field(default_factory=list, description="Fragments not understood, with why.")
    parser: str = Field("offline", description="Which parser produced this result.")
    fallback: bool = Field(False, description="The LLM parser failed and the offline parser answered.")
    fallback_cause: str | None = Field(None, description="Why the LLM parser's answer was not used.")
    usage: dict[str, Any] = Field(
        default_factory=empty_usage, description="LLM calls and tokens of this parse (zeros offline)."
    )

    @property
    def understood(self) -> bool:
        """Everything in the command was understood (a partial parse still applies its known parts)."""
        return not self.unparsed and not self.update.is_neutral()


class CommandParser(ABC):
    name: str

    @abstractmethod
    async def parse(
        self, text: str, *, memory: Preferences, recommendations: Sequence[int] = ()
    ) -> ParseResult:
        """Parse one command given the current preference memory and the items on screen."""

    def without_calls(self) -> CommandParser:
        """This parser as it reads without an LLM call (what reads text no user asked to have read by
        one, such as a judge's reject reason)."""
        return self
