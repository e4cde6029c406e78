"""An OpenAI-compatible endpoint and the limits of each kind of call (the application builds it:
``app.settings.Settings.llm_config``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

StructuredMethod = Literal["json_schema", "json_mode", "function_calling"]


@dataclass(frozen=True)
class LLMConfig:
    """An OpenAI-compatible endpoint and the limits of each kind of call."""

    base_url: str | None = None
    """None: no LLM; the agents are the offline ones."""
    model: str = "gpt-4o-mini"
    api_key: str = field(default="not-needed", repr=False)
    temperature: float = 0.0
    timeout_s: float = 30.0
    max_retries: int = 2
    """Retries after invalid output, then the offline fallback."""
    structured_method: StructuredMethod = "json_schema"
    max_tokens_rec: int = 160
    max_tokens_user: int = 128
    max_tokens_items: int = 512
    max_tokens_parser: int = 256
    thoughts_max_chars: int = 160
    """maxLength of the 'thoughts' field of structured answers; 0 drops it."""
    reason_max_chars: int = 200

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)
