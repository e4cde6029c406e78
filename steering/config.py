"""What choosing and building a command parser reads: a typed object the application builds
(``app.settings.Settings.parser_config``) and passes in, so steering never reads the settings itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from llm.config import LLMConfig

ParserChoice = Literal["auto", "offline", "llm", "learned"]
"""``RECLOOP_STEERING_PARSER``: a parser by name, or ``auto`` for the best one available."""


@dataclass(frozen=True)
class ParserConfig:
    models_dir: Path
    """Where each dataset's learned parser is looked for (``<models_dir>/<dataset>/command-parser.pt``)."""
    choice: ParserChoice = "auto"
    artifact: Path | None = None
    """The learned parser's artifact when not the default one beside the models."""
    llm: LLMConfig = field(default_factory=LLMConfig)
    """The endpoint the LLM parser calls (none: no LLM parser)."""
