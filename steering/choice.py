"""Which command parser answers: ``RECLOOP_STEERING_PARSER`` = auto | offline | llm | learned.

``auto`` picks the best one available: the learned parser when its artifact exists for the
catalog (and the embeddings extra that carries its encoder is installed) *and* it inverted no
more hard constraints than the rules on the held-out simulated commands of its training, with a
better exact reading there (both recorded in the artifact); else the LLM parser when an endpoint
is configured, else the rule-based offline parser. A parser that reads more but flips more
"no X" into "more X" is not the better one.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from recmodels.text import text_available
from steering.catalog_index import Catalog, CatalogIndex
from steering.config import ParserConfig
from steering.learned_parser import LearnedParser, ParserArtifactError, artifact_path, learned_info
from steering.llm_parser import LLMParser
from steering.parsing import CommandParser
from steering.rule_parser import OfflineParser

ParserKind = Literal["offline", "llm", "learned"]
PARSER_KINDS: tuple[ParserKind, ...] = ("offline", "llm", "learned")


class ParserUnavailable(RuntimeError):
    """The configured parser cannot be built (no artifact, no endpoint, no encoder)."""


def learned_artifact(config: ParserConfig, dataset: str) -> Path:
    return config.artifact or artifact_path(config.models_dir, dataset)


def parser_kind(config: ParserConfig, dataset: str) -> ParserKind:
    if config.choice != "auto":
        return config.choice
    artifact = learned_artifact(config, dataset)
    if (
        text_available()
        and artifact.is_file()
        and _learned_beats_rules(artifact, artifact.stat().st_mtime_ns)
    ):
        return "learned"
    return "llm" if config.llm.enabled else "offline"


@lru_cache(maxsize=16)
def _learned_beats_rules(artifact: Path, _mtime_ns: int) -> bool:
    """From the artifact's validation record (cached per file version: ``auto`` asks per command):
    the learned parser reads more commands exactly, and inverts no larger share of the commands it
    reads than the rules do of theirs (:func:`_inverts_no_more`)."""
    try:
        info = learned_info(artifact)
    except ParserArtifactError:
        return False
    learned, rules = info.get("val"), info.get("offline_val")
    if not isinstance(learned, dict) or not isinstance(rules, dict):
        return False  # trained before the comparison was recorded: not shown to be safer
    return learned["exact"] > rules["exact"] and _inverts_no_more(learned, rules)


def _inverts_no_more(learned: dict, rules: dict) -> bool:
    """Whether the learned parser's inversions per command read (not abstained) are within the
    rules' rate, up to its 95 % Wilson upper bound.

    Counts alone would punish reading: on MovieLens' simulated validation the rules abstain on 810
    of 982 commands and invert 3 of the 172 they read (1.7 %), the learned parser reads 830 and
    inverts 16 (1.9 %): fewer inversions by reading less is no safety. Without the abstentions
    (an artifact from before they were recorded) the counts are compared."""
    try:
        learned_read = learned["n"] - learned["abstained"]
        rules_read = rules["n"] - rules["abstained"]
    except KeyError:
        return learned["commands_with_inversion"] <= rules["commands_with_inversion"]
    if learned_read <= 0:
        return True  # it reads nothing, so it inverts nothing
    if rules_read <= 0:
        return learned["commands_with_inversion"] == 0
    rate = learned["commands_with_inversion"] / learned_read
    return rate <= _wilson_upper(rules["commands_with_inversion"], rules_read)


def _wilson_upper(successes: int, n: int, z: float = 1.96) -> float:
    share = successes / n
    centre = share + z * z / (2 * n)
    spread = z * ((share * (1 - share) + z * z / (4 * n)) / n) ** 0.5
    return (centre + spread) / (1 + z * z / n)


def build_parser(
    kind: ParserKind, catalog: Catalog | CatalogIndex, config: ParserConfig, dataset: str
) -> CommandParser:
    if kind == "learned":
        try:
            return LearnedParser.load(learned_artifact(config, dataset), catalog)
        except (ParserArtifactError, RuntimeError) as exc:
            raise ParserUnavailable(f"the learned steering parser is unavailable: {exc}") from exc
    if kind == "llm":
        if not config.llm.enabled:
            raise ParserUnavailable(
                "the llm steering parser needs RECLOOP_LLM_BASE_URL (an OpenAI-compatible endpoint)"
            )
        return LLMParser(catalog, config.llm)
    return OfflineParser(catalog)
