"""Training on retired natural sets (roles derived from a command's label), and the learned parser's
read-time rules: lists share their head's reading, the rules answer where the student applies
nothing, and emoji are not a foreign script (no model, no database)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from lab.steering.natural_labels import FrozenSetError, label_command, read_training_set
from steering.catalog_index import CatalogIndex
from steering.learned_parser import LearnedParser, Thresholds, _coordinated, _Prediction
from steering.lexicon import non_latin_share
from steering.mentions import Mention, MentionFinder
from steering.preferences import PreferenceUpdate
from steering.reading import N_ROLES, Role
from steering.student import CommandStudent, StudentConfig

DEV_SET = Path(__file__).parent / "data" / "steering_natural" / "movielens.jsonl"


@pytest.fixture(scope="module")
def index(ml_dataset) -> CatalogIndex:
    return CatalogIndex(ml_dataset)


@pytest.fixture(scope="module")
def finder(index) -> MentionFinder:
    return MentionFinder(index, common_words=frozenset({"heat", "big"}))


def _update(raw: dict) -> PreferenceUpdate:
    return PreferenceUpdate.model_validate(raw)


def _roles(command) -> list[tuple[str, Role]]:
    return [(p.mention.text, p.role) for p in command.planted]


def test_roles_come_from_the_side_each_value_is_on(finder, index):
    command = label_command(
        "anything from the 90s except dramas",
        _update(
            {"positive": {"year_range": {"start": 1990, "end": 1999}}, "negative": {"genres": ["Drama"]}}
        ),
        finder,
        index,
    )
    assert command is not None
    assert _roles(command) == [("the 90s", Role.POSITIVE), ("dramas", Role.NEGATIVE)]


def test_an_exclusion_labelled_by_what_it_leaves_is_an_unwanted_range(finder, index):
    command = label_command(
        "nothing older than 1990", _update({"positive": {"year_range": {"start": 1990}}}), finder, index
    )
    assert command is not None and _roles(command) == [("older than 1990", Role.NEGATIVE)]


def test_free_soft_wishes_and_abstentions_become_flags(finder, index):
    wish = label_command(
        "no horror, something to cry to",
        _update({"positive": {"soft": [{"text": "cry"}]}, "negative": {"genres": ["Horror"]}}),
        finder,
        index,
    )
    assert wish is not None and wish.soft_positive and not wish.soft_negative
    chat = label_command("what's the weather like", None, finder, index)
    assert chat is not None and chat.planted == () and chat.expected is None


def test_a_label_the_look_up_cannot_rebuild_is_not_taught(finder, index):
    # the title is not in the catalog: no mention carries it, so the label cannot be rebuilt
    unknown = _update({"negative": {"items": [5]}})
    assert label_command("no more Zorblax Returns", unknown, finder, index) is None


def test_only_retired_sets_are_trained_on(tmp_path):
    assert read_training_set(DEV_SET)  # v1: marked retired (spent for development)
    frozen = tmp_path / "movielens.jsonl"
    frozen.write_text(DEV_SET.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("**Frozen. Only for evaluation.**\n", encoding="utf-8")
    with pytest.raises(FrozenSetError, match="never trained on"):
        read_training_set(frozen)
    (tmp_path / "README.md").unlink()
    with pytest.raises(FrozenSetError):
        read_training_set(frozen)


def _probs(*roles: Role, confidence: float = 0.97) -> torch.Tensor:
    out = torch.full((len(roles), N_ROLES), (1 - confidence) / (N_ROLES - 1))
    for i, role in enumerate(roles):
        out[i, int(role)] = confidence
    return out


def _genre(text: str, start: int, word: str, genre: str) -> Mention:
    return Mention("genre", start, start + len(word), word, genres=(genre,))


def test_a_list_is_read_like_its_head():
    text = "no horror or comedies pls"
    mentions = [_genre(text, 3, "horror", "Horror"), _genre(text, 13, "comedies", "Comedy")]
    probs = _coordinated(text, mentions, _probs(Role.NEGATIVE, Role.POSITIVE))
    assert [Role(int(p.argmax())) for p in probs] == [Role.NEGATIVE, Role.NEGATIVE]


@pytest.mark.parametrize(
    "text",
    ["no horror and comedies are fine again", "no horror, comedies", "no horror but comedies"],
)
def test_a_second_clause_is_not_a_list(text):
    start = text.index("comedies")
    mentions = [_genre(text, 3, "horror", "Horror"), _genre(text, start, "comedies", "Comedy")]
    probs = _coordinated(text, mentions, _probs(Role.NEGATIVE, Role.POSITIVE))
    assert Role(int(probs[1].argmax())) is Role.POSITIVE


def _untrained(index: CatalogIndex, thresholds: Thresholds) -> LearnedParser:
    """A parser whose predictions the test writes itself: no encoder is run."""
    encoder = SimpleNamespace(tokenizer=SimpleNamespace(get_vocab=dict))
    student = CommandStudent(StudentConfig(tune_layers=0))
    return LearnedParser(index, student, encoder, thresholds)  # type: ignore[arg-type]


@pytest.mark.parametrize(("fallback", "genres"), [(True, ["Horror"]), (False, [])])
def test_the_rules_answer_where_the_student_applies_nothing(index, fallback, genres):
    parser = _untrained(index, Thresholds(rules_when_abstaining=fallback))
    text = "no horror"
    found = parser.finder.find(text)
    unsure = _Prediction(found, _probs(Role.NEGATIVE, confidence=0.5), torch.zeros(3), False, [False])
    result = parser.read(text, unsure, set())
    assert result.update.negative.genres == genres and result.parser == "learned"
    assert bool(result.unparsed) is not fallback  # the withheld span is reported only when nothing answers


def test_emoji_are_not_a_foreign_script():
    assert non_latin_share("❤️ Adele ❤️") == 0.0 and non_latin_share("что-нибудь другое") == 1.0


def test_ampersand_titles_are_found_when_said_with_and(lastfm_dataset):
    finder = MentionFinder(CatalogIndex(lastfm_dataset))
    for text in ("Simon and Garfunkel", "simon & garfunkel", "more guns and roses"):
        (mention,) = finder.find(text)
        assert mention.kind == "item" and lastfm_dataset.item(mention.items[0]).title in (
            "Simon & Garfunkel",
            "Guns N' Roses",
        )


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("jurasic park type of thing", "Jurassic Park"),  # a letter off
        ("silense of the lambs but less gory", "The Silence of the Lambs"),
        ("i loved the godfather, more like that", "The Godfather"),  # an everyday word after its article
    ],
)
def test_misspelt_titles_and_titles_after_their_article(ml_dataset, text, title):
    finder = MentionFinder(CatalogIndex(ml_dataset), common_words=frozenset({"godfather", "silence"}))
    items = [m for m in finder.find(text) if m.kind == "item"]
    assert [ml_dataset.item(m.items[0]).title for m in items] == [title]


def test_an_everyday_word_is_neither_a_misspelt_nor_a_lower_case_title(ml_dataset):
    finder = MentionFinder(CatalogIndex(ml_dataset), common_words=frozenset({"godfather", "something"}))
    assert not [m for m in finder.find("something about a godfather") if m.kind == "item"]


def test_prepare_parser_finds_the_checkouts_retired_sets_and_never_the_frozen_one():
    """`recloop prepare-parser` trains on the retired sets of this checkout (tests/data), v1-v6; the
    frozen v7 is not among them."""
    from cli.steering import retired_sets

    for dataset in ("movielens", "lastfm"):
        found = {path.parent.name for path in retired_sets(dataset)}
        assert "steering_natural" in found and "steering_natural_v6" in found, found
        assert "steering_natural_v7" not in found
