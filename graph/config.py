"""The loop's configuration: typed objects the application builds (``app.settings.Settings.loop_config``)
and passes in, so the graph never reads the application's settings.

Defaults are the service's defaults (``app/settings.py`` documents each field and its bounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

StructuredMethod = Literal["json_schema", "json_mode", "function_calling"]
RewardDisplay = Literal["top_picks", "score"]
AgentMode = Literal["offline", "llm"]
"""offline: the deterministic agents; llm: LLM agents (endpoint in ``LLMConfig``), offline fallbacks."""
AGENT_MODES: tuple[AgentMode, ...] = get_args(AgentMode)


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


@dataclass(frozen=True)
class LoopConfig:
    """What the loop, its agents and their calibration read."""

    data_dir: Path
    """Where cached item text vectors live (``embeddings/``)."""
    max_rounds: int = 4
    """Round limit of a loop unless its input says otherwise (paper: 4)."""
    n_candidates: int = 20
    accept_top_k: int | None = None
    """The offline user agent also accepts what the reward model ranks within this top-k."""
    reward_display: RewardDisplay = "top_picks"
    llm_loop_budget_s: float = 60.0
    """LLM wall time one loop may spend; past it the offline agents answer."""
    llm: LLMConfig = field(default_factory=LLMConfig)
