"""The offline command parser on the real MovieLens catalog: each form, and its refusals."""

from __future__ import annotations

import asyncio

import pytest

from steering.parsing import ParseResult
from steering.preferences import Preferences, PreferenceUpdate, Side, SoftPreference, YearRange
from steering.rule_parser import OfflineParser

TOY_STORY, STAR_WARS, HEAT = 0, 49, 272


@pytest.fixture(scope="module")
def parser(ml_dataset) -> OfflineParser:
    return OfflineParser(ml_dataset)


def _pos(**side) -> PreferenceUpdate:
    return PreferenceUpdate(positive=Side(**side))


def _neg(**side) -> PreferenceUpdate:
    return PreferenceUpdate(negative=Side(**side))


def _years(start: int | None, end: int | None) -> YearRange:
    return YearRange(start=start, end=end)


def _parse(parser: OfflineParser, text: str, recommendations: tuple[int, ...] = ()) -> ParseResult:
    return asyncio.run(parser.parse(text, memory=Preferences(), recommendations=recommendations))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no more horror", _neg(genres=["Horror"])),
        ("Not animated, please", _neg(genres=["Animation"])),
        ("I want comedies or dramas", _pos(genres=["Comedy", "Drama"])),
        ("no horror and thrillers", _neg(genres=["Horror", "Thriller"])),
        ("sci-fi", _pos(genres=["Sci-Fi"])),
        ("from the 90s", _pos(year_range=_years(1990, 1999))),
        ("westerns from the 1960s", _pos(genres=["Western"], year_range=_years(1960, 1969))),
        ("before 1980", _pos(year_range=_years(None, 1979))),
        ("after 1995", _pos(year_range=_years(1996, None))),
        ("only things from after 1999", _pos(year_range=_years(2000, None))),
        ("no horror titles", _neg(genres=["Horror"])),
        ("show me picks from the 80s", _pos(year_range=_years(1980, 1989))),
        ("between 1980 and 1985", _pos(year_range=_years(1980, 1985))),
        ("from 1995", _pos(year_range=_years(1995, 1995))),
        ("not from the eighties", _neg(year_range=_years(1980, 1989))),
        ("more like Toy Story", _pos(soft=[SoftPreference(text="Toy Story", item=TOY_STORY)])),
        ("less like heat", _neg(soft=[SoftPreference(text="Heat", item=HEAT)])),
        ("not Star Wars", _neg(items=[STAR_WARS])),
        ("something lighter", _pos(soft=[SoftPreference(text="light-hearted feel-good")])),
        ("horror is fine again", PreferenceUpdate(lift=Side(genres=["Horror"]))),
        ("bring back Star Wars", PreferenceUpdate(lift=Side(items=[STAR_WARS]))),
        ("Reset", PreferenceUpdate(reset=True)),
        ("forget my preferences", PreferenceUpdate(reset=True)),
    ],
)  # fmt: skip
def test_understood_forms(parser, text, expected):
    result = _parse(parser, text)
    assert result.unparsed == []
    assert result.understood
    assert result.update == expected


def test_issue_examples_combine_clauses(parser):
    lighter_90s = _parse(parser, "something lighter, from the 90s").update
    assert lighter_90s.positive.year_range == YearRange(start=1990, end=1999)
    assert lighter_90s.positive.soft == [SoftPreference(text="light-hearted feel-good")]
    toy_story = _parse(parser, "more like Toy Story but not animated").update
    assert toy_story.positive.soft == [SoftPreference(text="Toy Story", item=TOY_STORY)]
    assert toy_story.negative.genres == ["Animation"]


def test_duplicate_title_prefers_an_item_on_screen(parser, ml_dataset):
    by_title: dict[str, list[int]] = {}
    for item in ml_dataset.items:
        by_title.setdefault(item.title, []).append(item.id)
    title, ids = next((t, i) for t, i in by_title.items() if t and len(i) > 1)
    assert _parse(parser, f"more like {title}").update.positive.soft[0].item == ids[0]
    assert _parse(parser, f"more like {title}", (ids[1],)).update.positive.soft[0].item == ids[1]
    assert _parse(parser, f"not {title}").update.negative.items == ids, "an exclusion covers every copy"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("hello there", "'hello there' (in 'hello there'): not a known genre, year, mood or catalog title"),
        ("more like Nonexistent Film Xyz", "not a known genre, year, mood or catalog title"),
        ("no jazz", "'jazz' (in 'no jazz'): not a known genre"),
        ("more Toy Story", "say 'more like toy story' or 'not toy story'"),
        ("   ", "empty command"),
    ],
)
def test_refuses_what_it_does_not_understand(parser, text, reason):
    result = _parse(parser, text)
    assert not result.understood
    assert len(result.unparsed) == 1 and reason in result.unparsed[0]
    assert result.update.is_neutral(), "nothing is guessed"


def test_partial_parse_keeps_the_known_part_and_reports_the_rest(parser):
    result = _parse(parser, "no horror, and make it snappier, thanks")
    assert result.update == PreferenceUpdate(negative=Side(genres=["Horror"]))
    assert not result.understood
    assert result.unparsed == [
        "'make it snappier' (in 'make it snappier'): not a known genre, year, mood or catalog title"
    ]


async def test_title_only_catalog_refuses_genres(lastfm_dataset):
    lastfm = OfflineParser(lastfm_dataset)
    result = await lastfm.parse("no horror", memory=Preferences())
    assert result.unparsed == ["'horror' (in 'no horror'): this catalog has no genres"]
    artist = lastfm_dataset.items[0]
    excluded = await lastfm.parse(f"not {artist.title}", memory=Preferences())
    assert excluded.understood and artist.id in excluded.update.negative.items
    like = await lastfm.parse(f"more like {artist.title}", memory=Preferences())
    assert like.update.positive.soft == [SoftPreference(text=artist.title, item=artist.id)]


@pytest.mark.parametrize(
    "title", ["Boot, Das", "G.I. Jane", "To Wong Foo, Thanks for Everything! Julie Newmar"]
)
def test_titles_with_punctuation_survive_clause_splitting(parser, ml_dataset, title):
    item = ml_dataset.items[parser.index.ids_for_title(title)[0]]
    result = _parse(parser, f"more like {title}, but no horror")
    assert result.understood, result.unparsed
    assert result.update.positive.soft == [SoftPreference(text=item.title, item=item.id)]
    assert result.update.negative.genres == ["Horror"]
    said = title.lower()
    assert _parse(parser, f"more {title}").unparsed == [
        f"'{said}' (in 'more {said}'): say 'more like {said}' or 'not {said}'"
    ]


def test_every_movielens_title_can_be_named(parser, ml_dataset):
    """'more like X' and 'not X' resolve every title of the catalog (duplicates: any copy)."""
    failures = []
    for item in ml_dataset.items:
        if not item.title:
            continue
        copies = parser.index.ids_for_title(item.title)
        like = _parse(parser, f"more like {item.title}").update
        if [p.item in copies for p in like.positive.soft] != [True] or not like.negative.is_empty():
            failures.append(f"more like {item.title}")
        banned = _parse(parser, f"not {item.title}").update.negative
        if item.id not in banned.items and not banned.genres:  # "not Heat"-like titles that are genres
            failures.append(f"not {item.title}")
    assert failures == []


# Phrasings that say a genre is NOT wanted: the known ones of issue 43 and others no rule was written for.
UNWANTED = [
    ("anything but comedies", "Comedy"),
    ("Anything but horror or war", "Horror"),
    ("give me anything but westerns please", "Western"),
    ("everything except westerns", "Western"),
    ("I'd watch anything except horror", "Horror"),
    ("not a fan of westerns", "Western"),
    ("I've had enough of thrillers", "Thriller"),
    ("enough with the westerns already", "Western"),
    ("nothing too scary tonight please", "Horror"),
    ("horror? no", "Horror"),
    ("westerns - not tonight", "Western"),
    ("thrillers... meh", "Thriller"),
    ("I'm so over musicals", "Musical"),
    ("sick of dramas", "Drama"),
    ("spare me the romcoms", "Romance"),
    ("comedies are the last thing I want", "Comedy"),
    ("horror is a hard pass for me", "Horror"),
    ("i could do without sci-fi", "Sci-Fi"),
    ("keep the cartoons away", "Animation"),
    ("let's not do horror", "Horror"),
    ("anything other than drama", "Drama"),
    ("I'd rather avoid war movies", "War"),
    ("cannot stand musicals", "Musical"),
    ("i don't want no thrillers", "Thriller"),
    ("horror, but not tonight", "Horror"),
    ("a thriller? nah", "Thriller"),
    ("i'll take any genre but horror", "Horror"),
]
# ... and phrasings that say it IS wanted, with a negation word around it.
WANTED = [
    ("i don't want anything except comedies", "Comedy"),
    ("nothing but westerns", "Western"),
    ("no more horror, just comedies", "Comedy"),
    ("I wouldn't say no to a thriller", "Thriller"),
    ("not only dramas", "Drama"),
]


def _hard_genres(side: Side) -> set[str]:
    return set(side.genres)


@pytest.mark.parametrize(("text", "genre"), UNWANTED)
def test_an_unwanted_genre_is_never_read_as_wanted(parser, text, genre):
    result = _parse(parser, text)
    update = result.update
    assert genre not in _hard_genres(update.positive) | _hard_genres(update.lift), (text, update)
    assert genre in update.negative.genres or result.unparsed, "an abstention says why"


@pytest.mark.parametrize(("text", "genre"), WANTED)
def test_a_wanted_genre_is_never_read_as_unwanted(parser, text, genre):
    result = _parse(parser, text)
    assert genre not in _hard_genres(result.update.negative), (text, result.update)
    assert genre in result.update.positive.genres or result.unparsed


def test_known_negations_are_read_or_withheld_with_the_reason(parser):
    assert _parse(parser, "no more horror, just comedies").update == PreferenceUpdate(
        positive=Side(genres=["Comedy"]), negative=Side(genres=["Horror"])
    )
    but = _parse(parser, "anything but comedies")
    assert but.update.is_neutral()
    assert any("an exception" in why for why in but.unparsed), but.unparsed
    fan = _parse(parser, "not a fan of westerns")
    assert fan.update.is_neutral() and "'fan' may turn the wish around" in fan.unparsed[0]
    alone = _parse(parser, "more comedies, horror? no")
    assert alone.update.is_neutral(), "a lone 'no' may be about any clause: nothing applied"
    assert "'no' may turn around another part of the command" in alone.unparsed[-1]
    scary = _parse(parser, "more comedies but nothing too scary")
    assert scary.update == _pos(genres=["Comedy"]), "a negation with its own object withholds only itself"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("surprise me with a 70s thriller", _pos(genres=["Thriller"], year_range=_years(1970, 1979))),
        ("in the mood for a whodunit tonight", _pos(genres=["Mystery"])),
        ("put on a cowboy flick for me", _pos(genres=["Western"])),
        ("maybe some family friendly stuff", _pos(genres=["Children's"])),
    ],
)
def test_genres_in_any_phrasing_the_lookup_reads(parser, text, expected):
    assert _parse(parser, text).update == expected


def test_a_genre_followed_by_a_judgement_is_not_read(parser):
    result = _parse(parser, "a thriller would be the worst idea")
    assert result.update.is_neutral() and result.unparsed
