"""Which command parser answers: ``RECLOOP_STEERING_PARSER`` = auto | offline | llm | learned.

``auto`` picks the best one available, by the natural-command measurements of bench/README.md:
the learned parser when its artifact exists for the catalog (and the embeddings extra that
carries its encoder is installed), else the LLM parser when an endpoint is configured, else the
rule-based offline parser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from app.settings import Settings
from app.steering.learned_parser import LearnedParser, ParserArtifactError, artifact_path
from app.steering.llm_parser import LLMParser
from app.steering.parser import CommandParser, OfflineParser
from graph.steering.catalog_index import Catalog, CatalogIndex
from recmodels.text import text_available

ParserKind = Literal["offline", "llm", "learned"]
PARSER_KINDS: tuple[ParserKind, ...] = ("offline", "llm", "learned")


class ParserUnavailable(RuntimeError):
    """The configured parser cannot be built (no artifact, no endpoint, no encoder)."""


def learned_artifact(settings: Settings, dataset: str) -> Path:
    return settings.steering_parser_artifact or artifact_path(settings.models_dir, dataset)


def parser_kind(settings: Settings, dataset: str) -> ParserKind:
    choice = settings.steering_parser
    if choice != "auto":
        return choice
    if text_available() and learned_artifact(settings, dataset).is_file():
        return "learned"
    return "llm" if settings.llm_enabled else "offline"


def build_parser(
    kind: ParserKind, catalog: Catalog | CatalogIndex, settings: Settings, dataset: str
) -> CommandParser:
    if kind == "learned":
        try:
            return LearnedParser.load(learned_artifact(settings, dataset), catalog)
        except (ParserArtifactError, RuntimeError) as exc:
            raise ParserUnavailable(f"the learned steering parser is unavailable: {exc}") from exc
    if kind == "llm":
        if not settings.llm_enabled:
            raise ParserUnavailable(
                "the llm steering parser needs RECLOOP_LLM_BASE_URL (an OpenAI-compatible endpoint)"
            )
        return LLMParser(catalog, settings)
    return OfflineParser(catalog)
