"""The words steering reads: every word table, year pattern and THE clause splitter, in one place.

A parser never keeps a table of its own: what a word means is said here once.

- The mention look-up (:mod:`steering.mentions`, :mod:`steering.titles`), and so the learned parser,
  reads every table: genre, mood and style words, the year patterns, the title patterns.
- The rule parser (:mod:`steering.rule_parser`) reads the same tables, but only the words of its
  reach (``RULE_*_WORDS``: which words it knows, as it spells them; never another meaning), its own
  smaller year grammar (``RULE_*`` patterns) and its clause grammar (prefixes, fillers).
- The student (:mod:`steering.student`) reads the clause breaks and the cue words; both are part of
  its trained input, so changing them asks for a retrained parser.
- The simulator (``lab.steering.simulator``) writes commands with these words; its phrasing templates
  are its own (``lab.steering.phrasings``).

Table keys are word sequences as :func:`word_key` makes them: accents and case folded, any other
character a space ("Sci-Fi" -> "sci fi", "children's" -> "children s").

Where two tables disagreed, one meaning was kept (issue 44), the labelling contract's
(tests/data/steering_natural/README.md, which every later set follows):

- "romcom" is Comedy + Romance ("romcoms" -> Comedy + Romance in the contract; the rule parser read
  Romance alone);
- "classic" is an era, up to 1969 (the contract's "old"/"older"/"classic"/"vintage"/"golden age" ->
  end 1969; the rule parser read it as the soft mood "classic");
- "uplifting" is the soft wish "uplifting" (the rule parser wrote "light-hearted feel-good");
- the decade names include "noughties" (2000-2009), which the rule parser's list lacked.
"""

from __future__ import annotations

import re
import unicodedata

# --- text as the tables key it ---------------------------------------------------------------

WORD = re.compile(r"[0-9a-z]+")
"""A word of folded text."""


def fold(text: str) -> str:
    """Lower case, accents dropped, one character per character (offsets survive)."""
    out = []
    for ch in text:
        base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c)).lower()
        if ch in "\u2019\u2018`\u00b4":
            base = "'"
        out.append(base if len(base) == 1 else (ch.lower() if len(ch.lower()) == 1 else " "))
    return "".join(out)


def word_key(text: str) -> str:
    """The key of a phrase in the tables: its folded words, one space apart."""
    return " ".join(WORD.findall(fold(text)))


# --- genres, moods, music styles ---------------------------------------------------------------

# Word sequences -> catalog genre names (a catalog without the genre reads the words as moods).
GENRE_WORDS: dict[str, tuple[str, ...]] = {
    "action": ("Action",), "action packed": ("Action",), "adventure": ("Adventure",),
    "adventures": ("Adventure",), "animation": ("Animation",), "animated": ("Animation",),
    "cartoon": ("Animation",), "cartoons": ("Animation",), "anime": ("Animation",),
    "toon": ("Animation",), "toons": ("Animation",),
    "children s": ("Children's",), "childrens": ("Children's",), "children": ("Children's",),
    "kids": ("Children's",), "kid": ("Children's",), "kids movies": ("Children's",),
    "my kids": ("Children's",), "toddler": ("Children's",), "toddlers": ("Children's",),
    "preschooler": ("Children's",), "preschoolers": ("Children's",),
    "little ones": ("Children's",), "my little one": ("Children's",),
    "family": ("Children's",),
    "family friendly": ("Children's",), "comedy": ("Comedy",), "comedies": ("Comedy",),
    "funny": ("Comedy",), "comedic": ("Comedy",), "crime": ("Crime",), "gangster": ("Crime",),
    "documentary": ("Documentary",), "documentaries": ("Documentary",), "docs": ("Documentary",),
    "drama": ("Drama",), "dramas": ("Drama",), "dramatic": ("Drama",), "fantasy": ("Fantasy",),
    "film noir": ("Film-Noir",), "noir": ("Film-Noir",), "horror": ("Horror",), "scary": ("Horror",),
    "horrors": ("Horror",), "musical": ("Musical",),
    "musicals": ("Musical",), "mystery": ("Mystery",), "mysteries": ("Mystery",),
    "detective": ("Mystery",), "whodunit": ("Mystery",), "whodunits": ("Mystery",),
    "romance": ("Romance",), "romances": ("Romance",), "romantic": ("Romance",),
    "love stories": ("Romance",), "love story": ("Romance",), "romcom": ("Comedy", "Romance"),
    "romcoms": ("Comedy", "Romance"), "rom com": ("Comedy", "Romance"), "rom coms": ("Comedy", "Romance"),
    "romantic comedy": ("Comedy", "Romance"), "romantic comedies": ("Comedy", "Romance"),
    "sci fi": ("Sci-Fi",), "scifi": ("Sci-Fi",), "science fiction": ("Sci-Fi",), "thriller": ("Thriller",),
    "thrillers": ("Thriller",), "war": ("War",), "western": ("Western",), "westerns": ("Western",),
    "cowboy": ("Western",), "cowboys": ("Western",), "gunslinger": ("Western",), "gunslingers": ("Western",),
    "cops and robbers": ("Crime",), "song and dance": ("Musical",),
}  # fmt: skip
# Soft wishes no catalog field holds: word sequences -> the text the semantic matcher reads.
MOOD_WORDS: dict[str, str] = {
    "lighter": "light-hearted feel-good", "light": "light-hearted feel-good",
    "light hearted": "light-hearted feel-good", "lighthearted": "light-hearted feel-good",
    "feel good": "light-hearted feel-good", "feelgood": "light-hearted feel-good",
    "happier": "light-hearted feel-good", "happy": "light-hearted feel-good",
    "uplifting": "uplifting", "cheerful": "light-hearted feel-good", "fun": "fun entertaining",
    "darker": "dark grim", "dark": "dark grim", "gritty": "dark grim", "grim": "dark grim",
    "bleak": "dark grim", "serious": "serious", "sad": "sad", "sadder": "sad", "depressing": "sad depressing",
    "gloomy": "sad depressing", "violent": "violent", "gory": "violent gory", "bloody": "violent gory",
    "epic": "epic", "intense": "intense", "heavy": "heavy", "heavier": "heavy", "slow": "slow-paced",
    "slower": "slow-paced", "fast paced": "fast-paced", "upbeat": "upbeat energetic",
    "energetic": "upbeat energetic", "chill": "chill relaxing", "chilled": "chill relaxing",
    "relaxing": "chill relaxing", "calm": "chill relaxing", "mellow": "mellow", "calmer": "chill relaxing",
    "quiet": "quiet", "quieter": "quiet", "loud": "loud", "louder": "loud", "weird": "weird",
    "quirky": "quirky", "silly": "silly", "cheesy": "cheesy", "clever": "clever thoughtful",
    "thoughtful": "clever thoughtful", "smart": "clever thoughtful", "emotional": "emotional",
    "romantic mood": "romantic", "cozy": "cozy", "cosy": "cozy", "inspiring": "inspiring",
    "slasher": "slasher gore", "slashers": "slasher gore", "old fashioned": "old-fashioned",
    "danceable": "danceable", "dance": "dance", "party": "party", "acoustic": "acoustic",
    "instrumental": "instrumental", "ambient": "ambient", "melancholic": "melancholic",
    "melancholy": "melancholic", "aggressive": "aggressive", "sleepy": "sleepy",
    # qualities people ask for or against in their own words (adjectives, and their comparatives)
    "moody": "moody", "moodier": "moody", "summery": "summery", "sunny": "summery", "mopey": "sad depressing",
    "twisty": "twisty", "dumb": "dumb mindless", "brainless": "dumb mindless",
    "mindless": "dumb mindless", "stupid": "dumb mindless", "spooky": "spooky creepy",
    "creepy": "spooky creepy", "eerie": "spooky creepy", "gore": "violent gory", "campy": "campy",
    "trashy": "trashy", "raunchy": "raunchy", "wholesome": "wholesome", "heartwarming": "heartwarming",
    "nostalgic": "nostalgic", "dreamy": "dreamy",
    "sexy": "sensual", "sultry": "sensual", "angry": "angry", "catchy": "catchy", "groovy": "groovy",
    "jazzy": "jazzy", "funky": "funky", "folky": "folky", "bluesy": "bluesy", "soulful": "soulful",
    "poppy": "poppy", "poppier": "poppy", "edgy": "edgy", "edgier": "edgy", "artsy": "artsy", "arty": "artsy",
    "pretentious": "pretentious", "tearjerker": "sad emotional", "tearjerkers": "sad emotional",
    "bittersweet": "bittersweet", "suspenseful": "suspenseful tense", "tense": "suspenseful tense",
    "atmospheric": "atmospheric", "touching": "emotional", "corny": "cheesy",
    "goofy": "silly", "witty": "clever thoughtful", "absurd": "absurd surreal", "surreal": "absurd surreal",
    "trippy": "trippy psychedelic", "psychedelic": "trippy psychedelic", "haunting": "haunting",
    "cute": "cute", "lo fi": "lo-fi", "lofi": "lo-fi",
    "mellower": "mellow", "gentle": "mellow", "soothing": "chill relaxing", "peaceful": "chill relaxing",
    "hyped": "upbeat energetic", "pumped": "upbeat energetic",
    "grittier": "dark grim", "scarier": "scary", "creepier": "spooky creepy", "funnier": "fun entertaining",
    "cheerier": "light-hearted feel-good", "sappy": "sentimental", "sentimental": "sentimental",
}  # fmt: skip
# Music styles: LastFM has no genre field, so these are soft wishes there.
STYLE_WORDS: tuple[str, ...] = (
    "rock", "pop", "jazz", "metal", "heavy metal", "hip hop", "hiphop", "rap", "electronic", "electronica",
    "techno", "house", "trance", "indie", "punk", "folk", "classical", "country", "blues", "soul",
    "reggae", "r b", "rnb", "funk", "disco", "grunge", "emo", "alternative", "synth", "synthpop",
    "new wave", "goth", "gothic", "industrial", "ballads", "oldies", "opera", "edm", "dubstep",
    "trip hop", "britpop", "shoegaze", "post rock", "hard rock", "soft rock", "classic rock",
    "latin", "reggaeton", "salsa", "ska", "k pop", "kpop", "j pop", "bossa nova", "world music", "gospel",
    "bluegrass", "americana", "big band", "motown", "drum and bass", "dnb", "hardcore",
    "screamo", "black metal", "death metal", "nu metal", "thrash", "thrash metal", "prog", "progressive rock",
    "prog rock", "psych rock", "surf rock", "rockabilly", "chillwave", "vaporwave", "hyperpop",
    "grime", "afrobeat", "afrobeats", "dancehall", "new age", "soundtrack", "soundtracks", "lounge",
    "downtempo", "breakbeat", "glam rock", "power pop", "pop punk", "post punk", "doo wop", "eurodance",
    "italo disco", "boy band", "boy bands", "girl group", "folk rock", "indie rock", "indie pop",
    "dream pop", "math rock", "krautrock", "metalcore", "neo soul", "smooth jazz", "bebop", "jazz fusion",
    "baroque", "singer songwriter", "singer songwriters", "rap rock", "old school rap", "old school hip hop",
    "gangsta rap", "conscious rap", "emo rap", "shoegazey", "garage rock", "stoner rock", "sludge",
    "doom metal",
)  # fmt: skip


# --- eras and years ----------------------------------------------------------------------------

OLD_END = 1969
"""The last year of the vague era "old" ("older", "classic", "vintage", "golden age"): the end of the
sixties, the labelling contract's range."""
RECENT_SPAN = 3
"""The vague era "recent" ("new", "newer", "latest"): from the catalog's newest year minus this."""
OLD_WORDS = ("old", "older", "classic", "vintage", "golden age")
"""Words of the old era (``YEAR_PATTERNS``' "old" reads them, and more forms: "oldies", "old classics")."""
RECENT_WORDS = ("recent", "new", "newer", "latest")
"""Words of the recent era (``YEAR_PATTERNS``' "recent" reads them, and more: "these days", "modern")."""
DECADE_NAMES = {
    "twenties": 1920, "thirties": 1930, "forties": 1940, "fifties": 1950, "sixties": 1960,
    "seventies": 1970, "eighties": 1980, "nineties": 1990, "noughties": 2000,
}  # fmt: skip
SMALL_NUMBERS = (
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
)  # fmt: skip
UP_TO_NINETEEN = (*SMALL_NUMBERS, "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                  "nineteen")  # fmt: skip
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
NUMERALS = {
    **{r: str(n) for n, r in enumerate(("ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x"), 2)},
    **{w: str(n) for n, w in enumerate(("two", "three", "four", "five", "six", "seven", "eight", "nine"), 2)},
}  # fmt: skip
"""Sequel numbers are one word whatever their spelling: "Godfather 2" = "Godfather II" = "Godfather Part
Two"."""

_Y = r"(1[89]\d\d|20\d\d|'\d\d)"  # "'77" too
_B = r"(?<![0-9a-z'])"  # a word starts here (a "'77" too)
# A decade's name, or a word that may be one misspelt ("ninties", "eightys": see mentions' decade
# reading), also said in full ("the nineteen seventies")
_DEC = r"(?:(1[89]\d0|20\d0)\s?'?s|'?(\d0)\s?'?s|(?:nineteen[- ]?)?([a-z]{3,9}(?:ies|ys)))"
_MOD = r"(?:(early|mid|middle|late)[- ]?)?"
_THE = r"(?:the\s)?"
_YEAR_IN_WORDS = rf"nineteen[- ]?({'|'.join(TENS)})(?:(?:[- ]|\s?and\s)?({'|'.join(SMALL_NUMBERS[:9])}))?"
_OPEN_AFTER = r"(?:\s(?:on|onwards?|or later|and later|or newer|and newer|and up|forward))"
YEAR_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("between", rf"{_B}(?:between\s|from\s)?{_Y}\s?(?:and|to|until|till|through|thru|-|–)\s?{_Y}\b"),
        (
            "decade_pair",
            rf"\b{_THE}{_MOD}{_DEC}\s?(?:or|and|to|through|thru|-|/|&)\s?{_THE}{_MOD}{_DEC}(?![0-9a-z])",
        ),
        (
            "before_decade",
            rf"\b(before|pre-?|older than|earlier than|prior to)\s?{_THE}{_MOD}{_DEC}(?![0-9a-z])",
        ),
        ("after_decade", rf"\b(after|post-?|newer than|later than|past)\s?{_THE}{_MOD}{_DEC}(?![0-9a-z])"),
        ("since_decade", rf"\b(?:since\s{_THE}{_DEC}|from\s{_THE}{_DEC}{_OPEN_AFTER})(?![0-9a-z])"),
        ("before", rf"\b(before|pre-?|older than|earlier than|prior to)\s?{_Y}\b"),
        ("until", rf"\b(?:until|till|up to|up until|through|no later than|stop at|stopping at)\s{_Y}\b"),
        (
            "until_suffix",
            rf"{_B}{_Y}\s(?:or earlier|and earlier|or older|and older|and before|at the latest|at most)\b",
        ),
        ("after", rf"\b(after|post-?|newer than|later than|past)\s?{_Y}\b"),
        (
            "since",
            rf"{_B}(?:since\s{_Y}|from\s{_Y}{_OPEN_AFTER}|{_Y}(?:{_OPEN_AFTER}|\sat the earliest)"
            rf"|no earlier than\s{_Y})\b",
        ),
        ("decade", rf"\b{_THE}{_MOD}{_DEC}(?![0-9a-z])"),
        # "nineteen ninety-two", "nineteen eighty four"
        ("year_words", rf"\b{_YEAR_IN_WORDS}\b"),
        # a decade said the way other languages say it ("the comedy of 80 years", "the years 80")
        ("decade_years", r"\b(?:of\s(?:the\s)?'?(\d0)\s?years(?!\s(?:ago|old))|years\s'?(\d0)s?)\b"),
        ("year", rf"{_B}{_Y}\b"),
        (
            "recent",
            r"\b((?:the\s)?(?:last|past)\s(?:few|couple(?:\sof)?|several)\syears|recent\syears|these\sdays"
            r"|nowadays|recent|new|newer|newest|latest|modern|contemporary|more recent|current)\b",
        ),
        (
            "old",
            r"\b(old(?:[- ]school)?(?! fashioned|-fashioned)(?: classics?)?|older|oldies?|classics?|vintage"
            r"|golden[- ]age)\b",
        ),
    )
)
"""The look-up's year expressions, tried in this order on folded text: (name, pattern); the name says
how :mod:`steering.mentions` reads the groups."""
CHILD_MAX_AGE = 12  # "my 5 year old", "a ten-year-old": a child's film; "my 15 year old" is not
AGE = re.compile(rf"\b(\d{{1,2}}|{'|'.join(SMALL_NUMBERS)})[- ]?(?:(?:years?|yrs?)[- ]olds?|y/?o)\b")

# --- the rule parser: its reach and its grammar ---------------------------------------------------
# The rule parser knows fewer words than the look-up, and only as spelt here (a whole term of a clause,
# lower-cased: "sci-fi", "sci fi", "scifi"). These sets say which words; what each means is the table
# entry of its word_key (never another meaning). Issue 43 widens the rule parser's reach.

RULE_GENRE_WORDS = frozenset((
    "action", "adventure", "adventures", "animation", "animated", "cartoon", "cartoons", "anime",
    "children's", "childrens", "children", "kids", "kid", "family", "comedy", "comedies", "funny", "crime",
    "documentary", "documentaries", "drama", "dramas", "fantasy", "film-noir", "film noir", "noir", "horror",
    "scary", "musical", "musicals", "mystery", "mysteries", "romance", "romances", "romantic", "romcom",
    "sci-fi", "scifi", "sci fi", "science fiction", "thriller", "thrillers", "war", "western", "westerns",
))  # fmt: skip
RULE_MOOD_WORDS = frozenset((
    "lighter", "light", "light-hearted", "feel-good", "happier", "uplifting", "fun", "darker", "dark",
    "gritty", "serious", "sad", "sadder", "violent", "epic",
))  # fmt: skip
RULE_OLD_WORDS = frozenset(("classic",))
"""Words of the old era (``OLD_WORDS``) the rule parser reads."""

RULE_TURNING_WORDS = frozenset((
    # negation and refusal
    "no", "not", "never", "nothing", "none", "nor", "neither", "without", "nope", "nah", "cannot",
    "don't", "dont", "can't", "cant", "won't", "wont", "didn't", "didnt", "isn't", "isnt", "aren't", "arent",
    "wouldn't", "wouldnt", "doesn't", "doesnt", "shouldn't", "hardly", "barely",
    # exceptions and substitutions
    "but", "except", "excluding", "besides", "unless", "other", "than", "instead", "rather", "apart",
    "aside", "minus", "save", "outside", "alternative", "alternatives", "beyond",
    # weariness, dislike, removal
    "enough", "sick", "tired", "bored", "done", "over", "hate", "hated", "dislike", "fan", "avoid", "skip",
    "stop", "spare", "ban", "block", "filter", "rid", "drop", "cut", "pass", "ditch", "lose", "quit", "less",
    "fewer", "too", "last", "least", "worst", "ugh", "meh", "ew", "yuck", "out", "off", "away", "against",
    "remove", "exclude", "hide", "forget", "overdone", "overplayed", "annoying", "had", "fill", "seen",
    # a wish undone or brought back
    "again", "anymore", "longer", "back", "fine", "ok", "okay", "allowed", "mind", "changed", "after",
))  # fmt: skip
"""Words that may turn a wish around (negate it, make it an exception, undo or lift it) wherever they
stand. The rule parser reads a wish's side from its clause's leading prefix only (``NEGATIVE_PREFIXES``,
``POSITIVE_PREFIXES``, ``LIFT_*``), so a clause that still holds one of these past that prefix is
withheld into ``unparsed``, never read on a side it may not mean ("not a fan of westerns", "enough of
horror", "nothing too scary", "horror is the last thing I want"). A year pattern's own words
("after 1995", "older than 1980") are read before this check."""
RULE_EXCEPTION_LEADS = frozenset(("anything", "everything", "all", "whatever", "any", "nothing", "something"))
"""Before a "but" break these make the next clause an exception ("anything but comedies", "nothing but
westerns"): the rules withhold it rather than read it as a wish."""
RULE_NEUTRAL_WORDS = frozenset((
    "a", "an", "the", "some", "any", "of", "for", "me", "us", "please", "pls", "plz", "movies", "movie",
    "films", "film", "flicks", "flick", "stuff", "ones", "tonight", "today", "now", "thanks", "thx", "thank",
    "you", "kind", "type", "sort", "night", "evening", "weekend", "lol", "to", "watch", "see", "genre",
    "things", "titles", "items", "picks", "songs", "tracks", "games", "shows",
))  # fmt: skip
"""Words that carry no wish of their own: a clause of the rule parser may hold them beside what it reads
("no scary movies tonight please", "only things from after 1999"). The generic nouns of items cover every
catalog's kind (films, songs, games): one the rules do not know withheld the whole clause."""
RULE_WISH_WORDS = frozenset((
    "i", "i'm", "im", "i'd", "id", "we", "we're", "let's", "lets", "can", "could", "would", "will", "want",
    "wanna", "like", "love", "need", "feel", "feeling", "in", "mood", "surprise", "with", "give", "show",
    "put", "on", "find", "recommend", "maybe", "perhaps", "how", "about", "what", "something", "up",
    "craving", "fancy", "try", "do", "go", "one", "my", "our",
))  # fmt: skip
"""Words that ask for what they stand beside ("surprise me with a thriller", "in the mood for a
whodunit"): a wanted clause may hold them too, an unwanted one not ("no, I want horror" is no
exclusion)."""

RULE_RESET = re.compile(
    r"^(reset|start over|start again|clear( all)?( my)?( preferences| filters)?|"
    r"forget (everything|it all|all that|my preferences|what i said)|no preferences)( please)?$"
)
"""A whole command that asks to forget every preference."""
# Longest first: "no more" must win over "no".
NEGATIVE_PREFIXES = (
    "i do not want", "i don't want", "i dont want", "do not show", "don't show", "dont show",
    "stop recommending", "stop showing", "do not want", "don't want", "dont want", "i dislike",
    "i hate", "no more", "nothing", "without", "exclude", "remove", "avoid", "fewer", "less", "skip", "hide",
    "not", "no",
)  # fmt: skip
POSITIVE_PREFIXES = (
    "i would like", "i'd like", "i want", "i like", "i love", "show me", "give me", "how about",
    "something", "anything", "mostly", "prefer", "more", "only", "some", "just",
)  # fmt: skip
LIFT_SUFFIX = re.compile(r"^(?P<body>.+?) (is|are) (fine|ok|okay|allowed|good)( again| now| after all)?$")
LIFT_PREFIX = re.compile(
    r"^(allow|bring back|i don't mind|i dont mind|i'm ok with|im ok with|unblock) (?P<body>.+)$"
)
LIKE = re.compile(r"^(like|similar to|in the style of|such as) (?P<title>.+)$")
FILLER_START = re.compile(
    r"^(the|a|an|any|some|more|of|to|watch|see|movies|films|stuff|ones|things|titles|items|picks|songs|"
    r"tracks|games|shows)\s+"
)
FILLER_END = re.compile(
    r"\s+(movies|movie|films|film|ones|stuff|things|titles|items|picks|songs|tracks|games|shows|artists|"
    r"music|please|anymore|again|for now|for a while|for me|instead|too|then)$"
)
IGNORABLE = frozenset({"please", "thanks", "thank you", "ok", "okay", "and", "also", "then", "actually"})
"""Politeness and discourse words carry no preference: skipped, not reported as misunderstood."""
DISCOURSE_START = re.compile(r"^(actually|also|and|ok|okay|well|hmm|please|now|oh)\s+")

# The rule parser's year grammar: four-digit years and decades only (the look-up's ``YEAR_PATTERNS``
# read more forms: "'77", "the early nineties", "nineteen eighty-four").
_RULE_YEAR = r"(1[89]\d\d|20\d\d)"
RULE_DECADE = re.compile(r"\b(?:the )?(?:(1[89]\d0|20\d0)s|'?(\d0)'?s|(" + "|".join(DECADE_NAMES) + r"))\b")
RULE_BETWEEN = re.compile(
    rf"\b(?:between|from) {_RULE_YEAR} (?:and|to|until|till) {_RULE_YEAR}\b"
    rf"|\b{_RULE_YEAR} ?(?:-|to) ?{_RULE_YEAR}\b"
)
RULE_BEFORE = re.compile(rf"\b(before|older than|earlier than|until|up to|prior to) {_RULE_YEAR}\b")
RULE_AFTER = re.compile(
    rf"\b(after|newer than|later than|since|from) {_RULE_YEAR}( on| onwards| onward| or later)?\b"
)
RULE_IN_YEAR = re.compile(rf"\b(?:in |of )?{_RULE_YEAR}\b")
RULE_YEAR_FILLER = re.compile(r"\b(from|released|made|in|of|the|era|years?)\b")

# --- clauses and lists ---------------------------------------------------------------------------

CLAUSE_BREAK = re.compile(r"[,;.!?:]|\b(?:but|though|however|plus|also)\b| - ")
"""THE clause splitter: where one wish ends and the next begins. The rule parser reads a clause at a
time, the learned parser ends a list at a break, the student's context windows and cue words stop at
one. The student was trained with it: changing it asks for a retrained parser."""
CLAUSE_BREAK_TOKENS = (",", ";", ".", "!", "?", ":", "but", "though", "however", "-", "plus", "also")
"""The same breaks as the encoder's tokenizer sees them (a hyphen is a token of its own)."""


def split_clauses(text: str) -> list[str]:
    """The clauses of a command, stripped (empty ones where breaks meet)."""
    return [clause.strip() for clause in CLAUSE_BREAK.split(text)]


def split_clauses_with_breaks(text: str) -> list[tuple[str, str]]:
    """The same clauses, each with the break before it ("" for the first): (break, clause)."""
    pieces, start, before = [], 0, ""
    for found in CLAUSE_BREAK.finditer(text):
        pieces.append((before, text[start : found.start()].strip()))
        start, before = found.end(), found.group().strip()
    pieces.append((before, text[start:].strip()))
    return pieces


def normalize_text(text: str) -> str:
    """Curly quotes straightened, case folded, runs of spaces one space: what the clause and term
    splitters read (commands, and titles they must not cut)."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").casefold()
    return re.sub(r"\s+", " ", text).strip()


TERM_SPLIT = re.compile(r"\s*(?:\band\b|\bor\b|\bnor\b|&|/)\s*")
"""What separates the terms of one clause ("horror or thrillers", "rock/pop")."""
LIST_GAP = re.compile(r"\s*(?:,|;|/|&|\+|\band\b|\bor\b|\bnor\b)\s*(?:(?:and|or|no|not|nor)\s+)?(?:the\s+)?")
"""What separates the names of a list: "mariah, whitney, celine", "oasis or blur", "no X, no Y", "X & Y"."""
COORDINATION = re.compile(r"\s*(?:,\s*)?(?:and|or|nor|&|\+|/)\s+|\s*")
"""What joins a mention to the one before it in a list ("no horror or thrillers", "crime dramas")."""
LIST_TAIL = frozenset((
    "please", "pls", "plz", "movies", "movie", "films", "film", "flicks", "stuff", "music", "songs", "tracks",
    "ones", "either", "thanks", "thx", "thank", "you", "tonight", "today", "now", "at", "all", "whatsoever",
    "lol", "really", "too",
))  # fmt: skip
"""What may follow the last of a list without saying something of its own ("... or Katy Perry pls")."""
COURTESY = frozenset(
    ("the", "a", "an", "and", "or", "n", "please", "pls", "plz", "thanks", "thx", "thank", "you")
)  # fmt: skip
"""What may stand around a command's titles when it only names them."""
# Words that say which way a wish goes, whatever the phrasing around them: each is a 0/1 feature of a
# mention's clause, left and right of it, so a new phrasing that shares a cue ("not in the mood for")
# is read like the known ones that have it. The student was trained with them, in this order.
CUE_WORDS = (
    "no", "not", "never", "nothing", "none", "without", "less", "fewer", "enough", "sick", "tired", "hate",
    "avoid", "skip", "stop", "done", "over", "bored", "spare", "exclude", "remove", "hide", "rid", "drop",
    "cut", "but", "anything", "don't", "dont", "can't", "won't", "didn't", "isn't", "aren't", "wouldn't",
    "dislike", "fan", "rather", "more", "only", "just", "want", "like", "love", "prefer", "mood", "again",
    "anymore", "back", "fine", "ok", "okay", "allowed", "mind", "changed", "forget", "include", "filtering",
    "unblock", "longer", "limits", "similar", "too", "so", "much", "some", "give", "show", "play", "please",
    # exclusions, idioms and withdrawn refusals: shared by many phrasings, so they carry to new ones
    "except", "other", "than", "besides", "unless", "good", "pass", "nah", "nope", "ban", "filter", "block",
    "said", "take", "whole", "fill", "had", "seen", "overplayed", "annoying", "overdone", "hard", "zero",
    "minus", "doesn't", "have", "need", "either", "works", "any", "is", "are", "all", "everything",
    "whatever", "sure", "actually", "yes", "ew", "ugh", "meh", "out", "off", "away", "instead", "earlier",
    "before", "thing", "rule", "vibes", "type", "esque", "sounds", "watch", "see", "rewatch", "put",
)  # fmt: skip
CUE_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")

# --- titles and names ---------------------------------------------------------------------------

ARTICLES = frozenset({"the", "a", "an"})
MOVED_ARTICLE = re.compile(r"^(.+),\s*(the|a|an|la|le|les|l'|il|lo|el|los|las|der|die|das|det|den)$", re.I)
"""Articles a catalog moves behind a title ("Promesse, La", "Hussard sur le toit, Le")."""
BRACKETED = re.compile(r"^(.+?)\s*\(([^()]+)\)$")  # "Seven (Se7en)", "Nikita (La Femme Nikita)"
AKA = re.compile(r"^(?:a\.?k\.?a\.?|aka)\s+", re.I)
NOT_AN_ALIAS = re.compile(r"^(?:feat|ft|featuring|with|live|remix|remastered)\b", re.I)
SUBTITLE = re.compile(r"^(.+?)(?:\s+or)?:\s+\S")
"""What comes before a subtitle: "Star Trek: First Contact" -> "Star Trek" (not "Welle:Erdball")."""
ACT = re.compile(r"&|\+|\b(?:and|the|with|feat|featuring|experience|band|orchestra)\b", re.IGNORECASE)
"""The name of a group or a pairing ("Bob Marley & The Wailers")."""
AMPERSAND = re.compile(r"\s*[&+]\s*|\s+'?n'\s+", re.IGNORECASE)
"""Said "and" too: "Simon & Garfunkel", "Florence + the Machine", "Guns N' Roses"."""
LETTER_SYMBOLS = {"$": "s", "!": "i", "@": "a"}
"""Letters written as symbols inside a name ("Ke$ha", "P!nk", "A$AP"): people type the letter."""
SYMBOL_IN_WORD = re.compile(r"(?<=[A-Za-z])[$!@]|[$!@](?=[A-Za-z])")
SERIES_NOUNS = frozenset(("movies", "films", "flicks", "series", "franchise", "saga", "trilogy", "sequels"))
"""After a name several titles start with, these ask for all of them ("batman films", "the star trek
movies"); "sequels" for all but the one named by it alone ("Die Hard sequels")."""
SERIES_SINGULAR = frozenset(("movie", "film", "flick"))  # after "every", "each", "all", "any"
SERIES_EVERY = frozenset(("every", "each", "all", "any"))
SUFFIXES = ("ly", "y", "s", "es", "ed", "ing", "er", "ers", "ness", "ful")
"""Endings a word of the language takes ("awfully", "jerky"): a word that is one plus a suffix is no name."""
CHAT_ABBREVIATIONS = frozenset((
    "lol", "omg", "wtf", "btw", "idk", "imo", "imho", "tbh", "fyi", "smh", "asap", "lmao", "rofl", "brb",
    "ttyl", "pls", "plz", "thx", "afaik", "irl", "nsfw", "tldr", "aka", "diy", "faq", "eta", "rip", "vip",
))  # fmt: skip
"""Initials that are chat, not a band: never read as a name's initials."""

# --- other languages ------------------------------------------------------------------------------

NON_LATIN = re.compile(r"[^\x00-\u024f\u2000-\u206f\u20a0-\u20cf]")
FOREIGN_WORDS = frozenset((
    "je", "veux", "voudrais", "pas", "des", "les", "une", "avec", "sans", "quelque", "chose", "autre",
    "merci", "quiero", "algo", "nada", "otra", "otro", "peliculas", "pelicula", "sin", "con", "los", "las",
    "una", "del", "por", "favor", "gracias", "mas", "que", "ich", "mochte", "etwas", "anderes", "nicht",
    "keine", "kein", "mehr", "bitte", "ohne", "noch", "danke", "filme", "vorrei", "qualcosa", "di", "nuovo",
    "senza", "niente", "piu", "grazie", "diferente", "favore", "musica", "canciones", "musique", "eu",
    "quero", "alguma", "coisa", "nao",
))  # fmt: skip
"""Function words of the languages people most often mix in; a command mostly made of them is not English."""


def non_latin_share(text: str) -> float:
    """Share of letters outside the Latin scripts (a command in Cyrillic, CJK...). Emoji and other
    symbols are not letters: "❤️ Adele ❤️" is an English command."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return 0.0
    return sum(bool(NON_LATIN.match(ch)) for ch in letters) / len(letters)
