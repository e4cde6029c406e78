"""The loop's configuration: typed objects the application builds (``app.settings.Settings.loop_config``)
and passes in, so the graph never reads the application's settings.

Defaults are the service's defaults (``app/settings.py`` documents each field and its bounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from llm.config import LLMConfig

RewardDisplay = Literal["top_picks", "score"]
AgentMode = Literal["offline", "llm"]
"""offline: the deterministic agents; llm: LLM agents (endpoint in ``LLMConfig``), offline fallbacks."""
AGENT_MODES: tuple[AgentMode, ...] = get_args(AgentMode)


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
