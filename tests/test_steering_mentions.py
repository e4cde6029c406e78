"""Mention look-up, the simulator's labels and the natural-set scoring (no model, no database)."""

from __future__ import annotations

import pytest

from app.steering.mentions import GENRE_WORDS, MentionFinder, fold
from app.steering.reading import Reading, Role, assemble
from app.steering.scoring import score_all, score_command, wilson_interval
from app.steering.simulator import label_roles, simulate
from graph.steering.catalog_index import CatalogIndex
from graph.steering.preferences import PreferenceUpdate, Side, SoftPreference, YearRange

TOY_STORY, STAR_WARS, HEAT = 0, 49, 272


@pytest.fixture(scope="module")
def finder(ml_dataset) -> MentionFinder:
    return MentionFinder(CatalogIndex(ml_dataset), common_words=frozenset({"heat", "big", "crow"}))


@pytest.fixture(scope="module")
def lastfm_finder(lastfm_dataset) -> MentionFinder:
    return MentionFinder(CatalogIndex(lastfm_dataset), common_words=frozenset({"air", "muse"}))


def _one(finder: MentionFinder, text: str):
    found = finder.find(text)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("something from the nineties", 1990, 1999),
        ("the '90s please", 1990, 1999),
        ("the early nineties", 1990, 1994),
        ("the late 80s", 1985, 1989),
        ("before 1980", None, 1979),
        ("pre-1980 films", None, 1979),
        ("after 1990", 1991, None),
        ("since 1990", 1990, None),
        ("from 1990 on", 1990, None),
        ("from the 70s or 80s", 1970, 1989),
        ("between 1980 and 1990", 1980, 1990),
        ("something recent", 1995, None),
        ("old classics", None, 1969),
        ("nothing older than 1990", None, 1989),  # the reading turns the unwanted side into "from 1990"
    ],
)
def test_year_expressions(finder, text, start, end):
    mention = _one(finder, text)
    assert mention.kind == "year" and mention.years == YearRange(start=start, end=end)


@pytest.mark.parametrize(
    ("text", "genres"),
    [
        ("anything but comedies", ("Comedy",)),
        ("romcoms", ("Comedy", "Romance")),
        ("scary movies", ("Horror",)),
        ("kids' movies", ("Children's",)),
        ("SCI FI", ("Sci-Fi",)),
        ("science fiction", ("Sci-Fi",)),
        ("cowboy films", ("Western",)),
        ("a whodunit", ("Mystery",)),
        ("thriler", ("Thriller",)),  # a misspelling
    ],
)
def test_genre_words(finder, text, genres):
    mention = _one(finder, text)
    assert mention.kind == "genre" and mention.genres == genres


def test_titles_everyday_words_need_a_capital_and_spans_are_offsets(finder):
    text = "no more Star Wars and less like Heat"
    found = finder.find(text)
    assert [(m.kind, m.items[:1], text[m.start : m.end]) for m in found] == [
        ("item", (STAR_WARS,), "Star Wars"),
        ("item", (HEAT,), "Heat"),
    ]
    assert [m.kind for m in finder.find("it is too much heat for me")] == []
    assert _one(finder, "more like toy story").items[:1] == (TOY_STORY,)


def test_a_catalog_without_genres_or_years_reads_styles_and_eras_as_moods(lastfm_finder, lastfm_dataset):
    found = lastfm_finder.find("more rock from the 80s, and Radiohead")
    kinds = [(m.kind, m.text) for m in found]
    assert kinds[:2] == [("mood", "rock"), ("mood", "the 80s")]
    radiohead = found[2]
    assert radiohead.kind == "item" and lastfm_dataset.item(radiohead.items[0]).title == "Radiohead"
    assert [m.kind for m in lastfm_finder.find("something with air in it")] == []


def test_reading_flips_a_one_sided_exclusion_and_keeps_anchors_soft(finder, ml_dataset):
    index = finder.index
    found = finder.find("nothing older than 1990, less like Toy Story")
    update = assemble(Reading(found, [Role.NEGATIVE, Role.SOFT_NEGATIVE]), index)
    assert update.positive.year_range == YearRange(start=1990)
    assert update.negative == Side(soft=[SoftPreference(text="Toy Story", item=TOY_STORY)])
    found = finder.find("nothing from the 80s")
    assert assemble(Reading(found, [Role.NEGATIVE]), index).negative.year_range == YearRange(
        start=1980, end=1989
    )


def test_simulator_labels_are_reachable_and_held_out_phrasings_differ(finder, ml_dataset):
    index = finder.index
    train = simulate(index, 300, split="train", seed=1)
    val = simulate(index, 300, split="val", seed=1)
    assert 0.03 < sum(c.expected is None for c in train) / len(train) < 0.2
    pairs = []
    for command in train:
        found = finder.find(command.text)
        reading = Reading(
            found, label_roles(found, command.planted), reset=command.reset,
            soft_positive="w" if command.soft_positive else None,
            soft_negative="w" if command.soft_negative else None,
        )  # fmt: skip
        pairs.append((command.expected, assemble(reading, index)))
    # The look-up finds what the simulator planted (misses: duplicate titles, lower-cased everyday titles).
    assert score_all(pairs).exact / len(pairs) > 0.95
    assert {c.text for c in train}.isdisjoint(
        {c.text for c in val if c.expected is not None and len(c.text) > 25}
    )


def test_scoring_follows_the_labelling_contract():
    expected = PreferenceUpdate(
        negative=Side(genres=["Comedy"]), positive=Side(soft=[SoftPreference(text="lighter")])
    )
    same = PreferenceUpdate(
        negative=Side(genres=["comedy"]), positive=Side(soft=[SoftPreference(text="feel-good stuff")])
    )
    assert score_command(expected, same).exact  # genres case-folded, soft text not compared
    inverted = PreferenceUpdate(positive=Side(genres=["Comedy"]))
    scored = score_command(expected, inverted)
    assert not scored.exact and scored.inversions == 1
    lifted = PreferenceUpdate(lift=Side(items=[3]))
    assert score_command(lifted, PreferenceUpdate(negative=Side(items=[3]))).inversions == 1
    assert score_command(None, PreferenceUpdate()).exact  # abstaining on a null is right
    assert not score_command(None, inverted).exact
    assert not score_command(expected, PreferenceUpdate()).exact
    total = score_all([(expected, same), (expected, inverted)])
    assert total.exact == 1 and total.inversions == 1 and total.f1("genres") == 0.5
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0


def test_labels_keep_slasher_soft_and_old_fashioned_no_era(finder):
    slasher = _one(finder, "a good slasher")
    assert slasher.kind == "mood"
    assert all(m.kind != "year" for m in finder.find("something old-fashioned"))
    assert all(m.kind != "year" for m in finder.find("something old fashioned"))


def test_simulated_bare_wishes_and_double_negations_are_wanted(finder):
    commands = [
        *simulate(finder.index, 3000, split="train", seed=3),
        *simulate(finder.index, 3000, split="val", seed=3),
    ]
    words = {w for w, genres in GENRE_WORDS.items() if len(genres) == 1}
    bare = [c for c in commands if c.text.casefold().strip(" !?.") in words]
    assert bare and all(c.expected.positive.genres and not c.expected.negative.genres for c in bare)
    double = [c for c in commands if "don't want anything but" in c.text.casefold()]
    assert double and all(c.expected.positive.genres or c.expected.positive.year_range for c in double)
    assert all(not c.expected.negative.genres for c in double if len(c.planted) == 1)


def test_simulated_titles_follow_the_catalogs_convention(finder, lastfm_finder):
    """'more X' is a taste anchor for a film and the artist itself on a music catalog."""
    for f, field in ((finder, "soft"), (lastfm_finder, "items")):
        more = [
            c for c in simulate(f.index, 3000, split="train", seed=5)
            if len(c.planted) == 1 and c.planted[0].mention.kind == "item"
            and fold(c.text).startswith("more ") and " like " not in fold(c.text)
        ]  # fmt: skip
        assert more
        assert all(getattr(c.expected.positive, field) for c in more), [c.text for c in more][:5]
