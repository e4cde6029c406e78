"""One lexicon: every parser gives a word the meaning steering/lexicon.py gives it, and no module keeps a
second table of the same words (no model, no database)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from steering import lexicon
from steering.catalog_index import CatalogIndex
from steering.mentions import MentionFinder
from steering.preferences import Preferences, PreferenceUpdate, Side, SoftPreference, YearRange
from steering.rule_parser import OfflineParser

ROOT = Path(__file__).resolve().parents[1]
OLD_ERA = YearRange(end=lexicon.OLD_END)


@pytest.fixture(scope="module")
def rules(ml_dataset) -> OfflineParser:
    return OfflineParser(ml_dataset)


@pytest.fixture(scope="module")
def finder(ml_dataset) -> MentionFinder:
    return MentionFinder(CatalogIndex(ml_dataset))


def _rules(parser: OfflineParser, text: str) -> PreferenceUpdate:
    result = asyncio.run(parser.parse(text, memory=Preferences()))
    assert not result.unparsed, result.unparsed
    return result.update


def _mentions(finder: MentionFinder, text: str) -> list[tuple[str, object]]:
    return [(m.kind, m.genres or m.years or m.mood) for m in finder.find(text)]


def test_a_romcom_is_a_comedy_and_a_romance_to_every_reader(rules, finder):
    # The labelling contract (tests/data/steering_natural/README.md): "romcoms" -> Comedy + Romance.
    assert lexicon.GENRE_WORDS["romcom"] == ("Comedy", "Romance")
    assert _rules(rules, "more romcom") == PreferenceUpdate(positive=Side(genres=["Comedy", "Romance"]))
    assert _rules(rules, "no romcom") == PreferenceUpdate(negative=Side(genres=["Comedy", "Romance"]))
    assert _mentions(finder, "a romcom") == [("genre", ("Comedy", "Romance"))]


def test_classic_is_the_old_era_to_every_reader_not_a_mood(rules, finder):
    # The contract: "old"/"older"/"classic"/"vintage"/"golden age" -> end 1969.
    assert "classic" not in lexicon.MOOD_WORDS
    assert _rules(rules, "something classic") == PreferenceUpdate(positive=Side(year_range=OLD_ERA))
    assert _rules(rules, "classic movies please") == PreferenceUpdate(positive=Side(year_range=OLD_ERA))
    for word in lexicon.OLD_WORDS:
        assert _mentions(finder, f"something {word}") == [("year", OLD_ERA)], word


def test_uplifting_and_the_noughties_mean_one_thing(rules, finder):
    assert _rules(rules, "something uplifting") == PreferenceUpdate(
        positive=Side(soft=[SoftPreference(text=lexicon.MOOD_WORDS["uplifting"])])
    )
    assert _mentions(finder, "something uplifting") == [("mood", "uplifting")]
    noughties = YearRange(start=2000, end=2009)
    assert _rules(rules, "from the noughties") == PreferenceUpdate(positive=Side(year_range=noughties))
    assert _mentions(finder, "from the noughties") == [("year", noughties)]


def test_the_rule_parsers_reach_is_words_of_the_tables():
    assert {lexicon.word_key(w) for w in lexicon.RULE_GENRE_WORDS}.issubset(lexicon.GENRE_WORDS)
    assert {lexicon.word_key(w) for w in lexicon.RULE_MOOD_WORDS}.issubset(lexicon.MOOD_WORDS)
    assert lexicon.RULE_OLD_WORDS.issubset(lexicon.OLD_WORDS)
    for table in (lexicon.GENRE_WORDS, lexicon.MOOD_WORDS, dict.fromkeys(lexicon.STYLE_WORDS)):
        assert all(key == lexicon.word_key(key) for key in table), "a key that word_key never makes"


def test_one_clause_splitter():
    assert lexicon.split_clauses("no horror, more comedies but not 80s: also dramas - thanks") == [
        "no horror", "more comedies", "not 80s", "", "dramas", "thanks",
    ]  # fmt: skip
    breaks = {b for b in lexicon.CLAUSE_BREAK_TOKENS if b != "-"}
    assert all(lexicon.CLAUSE_BREAK.fullmatch(b) for b in breaks)
    assert lexicon.CLAUSE_BREAK.fullmatch(" - ") and not lexicon.CLAUSE_BREAK.search("sci-fi")


def _string_tables(path: Path) -> list[tuple[str, set[str]]]:
    """Module-level names bound to a literal collection of strings (dict keys and values, tuple or
    set members), with those strings."""
    tables = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        words = {
            n.value.casefold()
            for n in ast.walk(node.value)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        }
        if len(words) >= 5:
            tables += [(ast.unparse(target), words) for target in targets]
    return tables


MEANINGS = {
    lexicon.word_key(word)
    for table in (
        lexicon.GENRE_WORDS, lexicon.MOOD_WORDS, lexicon.STYLE_WORDS, lexicon.OLD_WORDS, lexicon.RECENT_WORDS,
        lexicon.DECADE_NAMES,
    )
    for word in table
}  # fmt: skip
NOT_RESTATED = {
    "phrasings.py": "the command simulator's phrasing bank: what it writes, not what words mean",
    "movielens.py:GENRES": "MovieLens's own genre names in u.item's column order: the data format",
    "synthetic.py:_ADJECTIVES": "the synthetic catalog's title words: what titles are made of",
}


def test_no_second_table_of_the_lexicons_words():
    """A literal table anywhere in the code that shares three words or more with the lexicon's word
    tables (genre, mood, style, era, decade words) restates it."""
    sources = [
        path
        for package in ("steering", "lab", "app", "cli", "graph", "bench", "recmodels")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name not in ("lexicon.py", *NOT_RESTATED)
    ]
    assert len(sources) > 50
    restated = {
        f"{path.relative_to(ROOT)}:{name}": shared
        for path in sources
        for name, words in _string_tables(path)
        if f"{path.name}:{name}" not in NOT_RESTATED
        and len(shared := sorted({lexicon.word_key(w) for w in words} & MEANINGS)) >= 3
    }
    assert not restated, restated
