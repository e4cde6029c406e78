"""The command simulator: structured preference updates and many natural phrasings of each.

It works from the catalog's metadata only (genres and years where the catalog has them, its
titles, and a vocabulary of moods and music styles): it draws what a user wants (one to three
clauses: a genre, an era, a title to exclude or to compare to, a mood, a reset), then writes it
the way people talk -- hedges, idioms, indirect wishes, exclusions phrased as inclusions
("nothing older than 1990"), negation scope over several clauses, decades and eras in words,
casing noise and misspellings -- and knows exactly which span means what. Off-topic chat,
gibberish and wishes no field can hold are drawn too, labelled "nothing to apply".

Templates are split into a training share and a held-out share (every fourth), so validation
measures phrasings the student never saw, not memorised ones.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from steering.catalog_index import CatalogIndex
from steering.lexicon import (
    DECADE_NAMES,
    GENRE_WORDS,
    MOOD_WORDS,
    OLD_END,
    OLD_WORDS,
    RECENT_SPAN,
    RECENT_WORDS,
    STYLE_WORDS,
    fold,
)
from steering.mentions import Mention, MentionKind, overlaps
from steering.preferences import PreferenceUpdate, YearRange
from steering.reading import Reading, Role, assemble

Split = Literal["train", "val"]

_POSITIVE = (
    "more {x}", "i want {x}", "show me {x}", "i could go for {x}", "i'm in the mood for {x}", "give me {x}",
    "only {x}", "just {x} please", "i'd love some {x}", "how about {x}", "{x} please", "can i get {x}",
    "i'm craving {x}", "nothing but {x}", "stick to {x}", "i prefer {x}", "i really like {x}", "i love {x}",
    "bring on the {x}", "i wouldn't mind some {x}", "i feel like {x} tonight", "{x} would be nice",
    "maybe {x}?", "lots of {x}", "i'm really into {x} lately", "put on some {x}", "focus on {x}",
    "i'd rather have {x}", "what about {x}", "got any {x}?", "i'm up for {x}", "let's go with {x}",
    "i want to see {x}", "something like {x} would hit the spot", "mostly {x}", "i'd like {x}",
    "more of the {x} please", "i'm after {x}", "in the mood for {x} today", "let's do {x}",
    # bare and elliptical requests: a wanted phrase needs no verb
    "{x}", "{x}?", "{x} tonight", "{x} pls", "{x}!", "{x} maybe", "um, {x}", "{x}, either works",
    "{x} would be great", "any good {x}?", "do you have {x}?", "is there any {x}?", "got {x}?",
    "i'm thinking {x}", "feeling like {x}", "kinda want {x}", "i guess {x}", "idk, {x}?", "{x} for sure",
    "gimme {x}", "{x} all the way", "something {x}", "a good {x}", "{x} sounds good", "{x} is what i want",
    "we want {x}", "me and my wife want {x}", "preferably {x}", "ideally {x}", "{x} if you have it",
    "could you find me {x}", "can you recommend {x}", "recommend me {x}", "looking for {x}",
    "i need {x}", "only {x} from now on", "strictly {x}", "{x} and nothing else", "{x} only",
    # double negation and exclusions phrased as inclusions: what is left is wanted
    "i don't want anything but {x}", "i don't want anything except {x}", "nothing except {x}",
    "i want nothing but {x}", "don't show me anything other than {x}", "nothing other than {x}",
    "i won't watch anything but {x}", "no, i want {x}",
)  # fmt: skip
_NEGATIVE = (
    "no {x}", "no more {x}", "less {x}", "fewer {x}", "i'm sick of {x}", "enough with the {x}",
    "anything but {x}", "not in the mood for {x}", "skip the {x}", "i hate {x}", "i can't stand {x}",
    "not {x}", "stop showing me {x}", "spare me the {x}", "without {x}", "i'm tired of {x}",
    "i've had enough of {x}", "i have seen enough {x}", "i don't want {x}", "{x} is not my thing",
    "please no {x}", "cut the {x}", "avoid {x}", "exclude {x}", "i'm done with {x}", "not a fan of {x}",
    "i don't like {x}", "i dislike {x}", "{x}? no thanks", "lay off the {x}", "keep the {x} away",
    "i'd rather not see {x}", "no {x} at all", "hold the {x}", "way too much {x} lately", "drop the {x}",
    "i really don't want {x}", "{x} bores me", "stay away from {x}", "none of the {x}", "i'm over {x}",
    "nothing {x}", "hide {x}", "ditch the {x}", "too many {x}, cut back", "i could do without {x}",
    # idioms and elliptical refusals
    "i'm good on {x}", "i'm good on {x} for now", "i've had my fill of {x}", "hard no on {x}",
    "{x} is a hard no", "{x}? nah", "nah, no {x}", "not feeling {x}", "not really feeling {x} tonight",
    "anything except {x}", "everything except {x}", "everything but {x}", "please, anything but {x}",
    "i'll pass on {x}", "pass on the {x}", "not into {x}", "{x} is not for me", "enough {x}",
    "{x} is overdone", "too much {x}", "less {x} please", "no {x} whatsoever", "nope to {x}",
    "zero {x}", "i'd prefer no {x}", "i'm not in the mood for {x}", "no {x} pls", "{x} gets old",
    "{x} again? no", "so done with {x}", "i can't do {x} right now", "i've seen too many {x}",
    "no thanks to {x}", "{x} is a no from me", "not {x} again", "don't want {x}", "i'd rather skip {x}",
    "leave out the {x}", "leave {x} out", "minus the {x}", "anything that isn't {x}",
    "just not {x}", "whatever, just not {x}", "{x} is too much for me", "i never want {x}",
    # exclusions that follow a wish ("anything from the 90s except dramas") and permission around one
    "except {x}", "except for {x}", "but no {x}", "but not {x}", "just no {x}", "without the {x}",
    "everything except {x} is fine", "anything but {x} is ok", "all good except {x}",
    "anything is fine except {x}", "whatever you want, just no {x}", "everything but {x} works for me",
)  # fmt: skip
_LIFT = (
    "{x} is fine again", "{x} is ok now", "i don't mind {x} anymore", "you can show me {x} again",
    "bring back {x}", "{x} is allowed again", "{x} is back on the table", "i changed my mind about {x}",
    "forget what i said about {x}", "{x} is fine after all", "unblock {x}", "feel free to include {x} again",
    "let {x} back in", "{x} isn't off limits anymore", "you can include {x} again", "i'm fine with {x} again",
    "i'm ok with {x} now", "go ahead and show {x} again", "no need to exclude {x} anymore",
    "stop filtering out {x}", "{x} can come back", "{x} are okay again", "i take back what i said about {x}",
    "it's fine to show {x} again", "{x} is alright now", "i no longer mind {x}",
    "{x} is fine i guess", "{x} is ok i suppose", "{x} is fine", "{x} are fine", "{x} is fine by me",
    "actually {x} is fine", "sure, {x} is ok", "{x} would be fine too", "i'm ok with {x}",
    "it doesn't have to be {x}", "doesn't need to be {x}", "{x} is cool again", "ok {x} can come back",
    "{x} is okay", "i can live with {x}", "{x} is not a dealbreaker", "{x} no longer off limits",
    "{x} wouldn't hurt", "you can put {x} back", "{x} is allowed",
    # a withdrawn refusal names the refusal: "no" here is not a wish
    "i said no {x} earlier, but i take that back", "forget the whole no-{x} thing", "scratch the no {x} rule",
    "about the {x} ban, forget it", "the {x} ban is over", "ignore what i said about no {x}",
    "i said no {x} but i changed my mind", "drop the {x} filter", "remove the {x} block",
    "you don't have to avoid {x} anymore", "no need to skip {x}", "stop excluding {x}",
)  # fmt: skip
_ITEM_POSITIVE = (
    "play more {x}", "i want {x}", "more {x}", "put on some {x}", "i'd like to hear {x}", "play {x}",
    "give me {x}", "i'm in the mood for {x}", "some {x} please", "i love {x}, more of it",
    "queue up {x}", "i want to listen to {x}", "let's hear {x}", "more {x} please", "{x} please",
)  # fmt: skip
_MOVIE_POSITIVE = (
    "show me {x}", "put on {x}", "i want to rewatch {x}", "{x}!", "i want to watch {x}", "let's watch {x}",
    "can you put on {x}", "play {x}", "i'd like to see {x}", "queue up {x}", "watch {x}", "{x} please",
    "is {x} on here?", "find me {x}", "i want {x}", "can we watch {x}", "pull up {x}", "start {x}",
)  # fmt: skip
_MOVIE_SOFT_POSITIVE = (
    "more {x}", "{x} vibes", "i liked {x}", "{x} is my favorite", "i loved {x}", "something like {x}",
    "more stuff like {x}", "{x} type of thing", "i really enjoyed {x}", "big fan of {x}",
    "{x} was great, more of that", "similar to {x} please",
)  # fmt: skip
_ARTIST_POSITIVE_EXTRA = (
    "{x}", "{x}!", "{x} pls", "more {x}!", "i need {x}", "{x} now", "some {x}?", "i'm feeling {x} today",
    "blast some {x}", "crank up {x}", "throw on some {x}",
)  # fmt: skip
_ARTIST_SOFT_POSITIVE_EXTRA = (
    "{x} vibes", "{x} type stuff", "{x}-esque", "{x} fan here", "sounds like {x}",
    "stuff that sounds like {x}", "artists like {x}", "bands like {x}",
)  # fmt: skip
_ARTIST_NEGATIVE_EXTRA = (
    "less {x}", "{x} is overplayed", "{x} is annoying", "too much {x}", "{x} is too much", "less {x} please",
    "{x} is getting old", "i'm good on {x}", "no more {x} pls",
)  # fmt: skip
_ITEM_NEGATIVE = (
    "no more {x}", "i never want to see {x} again", "don't show me {x}", "skip {x}", "not {x}",
    "i'm sick of {x}", "enough {x}", "remove {x}", "stop recommending {x}", "i can't stand {x}",
    "no {x} please", "i hate {x}", "get rid of {x}", "{x}? no thanks", "take {x} off the list",
    "i've seen {x} too many times", "i never want to hear {x} again", "stop playing {x}",
    "anything but {x}", "exclude {x}", "i'm done with {x}", "no {x}", "keep {x} out of it",
    "i don't want {x}", "spare me {x}", "hide {x}",
)  # fmt: skip
_ITEM_SOFT_POSITIVE = (
    "more like {x}", "something similar to {x}", "stuff like {x}", "in the vein of {x}",
    "along the lines of {x}", "i loved {x}, more like that", "anything like {x}",
    "something that reminds me of {x}", "similar to {x}", "in the style of {x}", "things like {x} please",
    "more stuff like {x}", "give me something like {x}", "something close to {x}", "like {x}",
    "if you have anything like {x}", "i want more like {x}", "something with the vibe of {x}",
    "what else is like {x}?", "recommend things similar to {x}",
)  # fmt: skip
_ITEM_SOFT_NEGATIVE = (
    "less like {x}", "nothing like {x}", "not like {x}", "nothing similar to {x}",
    "less stuff like {x}", "don't give me anything like {x}", "avoid things like {x}",
    "nothing in the style of {x}", "fewer things like {x}", "stay away from stuff like {x}",
    "not so much like {x}", "less of the {x} kind of thing",
)  # fmt: skip
_MOOD_POSITIVE = (
    "something {x}", "more {x} stuff", "i want something {x}", "i'm in the mood for something {x}",
    "give me something {x}", "something a bit more {x}", "make it {x}", "more {x} please",
    "can it be more {x}?", "i need something {x} tonight", "keep it {x}", "something {x} would be good",
)  # fmt: skip
_MOOD_NEGATIVE = (
    "nothing too {x}", "not so {x}", "less {x} stuff", "nothing {x}", "please nothing {x}",
    "not too {x}", "less {x}", "i don't want anything {x}", "nothing {x} tonight", "tone down the {x}",
    "no {x} stuff", "skip anything {x}",
)  # fmt: skip
_RESET = (
    "start over", "forget everything i said", "reset", "let's start from scratch", "clear my preferences",
    "wipe everything", "scratch all that", "forget all my preferences", "reset everything", "start fresh",
    "let's begin again", "forget what i told you before", "clean slate please", "start again",
    "undo all my filters", "drop all my preferences", "forget it all", "back to square one",
    "new session", "forget my earlier picks", "ignore everything from before", "fresh start",
    "let's wipe the slate", "throw out what i said", "clear all that", "from scratch please",
    "disregard my previous requests", "reset my filters", "forget the last few things i said",
    "never mind all of that", "let's try again from zero", "cancel everything i asked for",
)  # fmt: skip
_FREE_SOFT_POSITIVE = (
    "something i can fall asleep to", "something for a rainy day", "something for date night",
    "something that makes me think", "stuff to work out to", "something to cry to",
    "something to watch with my parents", "something that will make me laugh out loud",
    "a hidden gem", "something cozy for a sunday", "music for a road trip", "songs for studying",
    "something with a twist", "stuff that gets me pumped", "something good for a party",
    "i wanna laugh", "i need a good cry", "date night", "it's halloween", "we just want explosions",
    "space movies", "something for a long flight", "i want to feel good", "something to unwind",
    "my kids are watching with me tonight", "my daughter is 10", "it's for my little brother",
    "watching with the family", "something the kids won't hate", "girls night in", "guys night",
    "something mind-bending", "something with great music", "a movie about friendship",
    "something to wake me up", "music for cooking", "something for a breakup", "background music",
)  # fmt: skip
_FREE_SOFT_NEGATIVE = (
    "nothing that makes me sad", "nothing too slow please", "nothing that keeps me up at night",
    "nothing too heavy on the brain", "nothing with a sad ending", "nothing that will put me to sleep",
)  # fmt: skip
# Wishes no catalog field holds, said without a mood or style word: the labelling contract keeps them
# as soft text on their side (people, themes, situations, qualities), never as abstentions.
_FREE_SOFT_POSITIVE += (
    "something with a strong female lead", "anything with a good plot twist", "movies about time travel",
    "something with dinosaurs", "a good heist movie", "something set in space", "kung fu stuff",
    "superhero stuff", "stuff with great dialogue", "something based on a true story", "a book adaptation",
    "black and white films", "silent films", "a cult favourite", "something that holds up",
    "only oscar winners", "something my grandma would enjoy", "films with subtitles", "keep it pg",
    "something sweet", "a real tearjerker", "mind-blowing visuals", "female vocalists",
    "only female singers", "french music", "songs in spanish", "artists from sweden", "underground stuff",
    "deep cuts", "guitar solos", "long instrumentals", "stuff with a good beat", "live recordings",
    "songs i can sing along to", "music for the gym", "something for a long drive", "i just got dumped",
    "film scores", "video game soundtracks", "one-hit wonders", "summery stuff", "rainy day music",
    "more guitar", "softer stuff",
)  # fmt: skip
_FREE_SOFT_NEGATIVE += (
    "no gore", "nothing brainless", "no jump scares", "nothing with subtitles", "no sappy stuff",
    "nothing mainstream", "no vocals", "less autotune", "no love songs", "less mopey", "no screaming",
    "nothing overplayed", "no banjo stuff", "nothing from the radio", "no remixes", "not so much shouting",
    "less of the moody stuff", "no more breakup songs",
)  # fmt: skip
# People and themes a catalog has no field for: soft on whichever side the template puts them.
_MOVIE_TOPICS = (
    "tom hanks", "hitchcock", "spielberg", "tarantino", "jim carrey", "meg ryan", "bogart",
    "clint eastwood", "schwarzenegger", "al pacino", "de niro", "kubrick", "woody allen", "audrey hepburn",
    "john wayne", "harrison ford", "sandra bullock", "julia roberts", "mel gibson", "bruce willis",
    "stallone", "jackie chan", "nicolas cage", "tom cruise", "denzel", "brad pitt", "kevin costner",
    "disney", "pixar", "the coen brothers", "scorsese", "john carpenter", "billy wilder", "cary grant",
    "marilyn monroe", "dinosaurs", "zombies", "vampires", "robots", "sharks", "pirates", "spies",
    "time travel", "heists", "car chases", "explosions", "plot twists", "twist endings", "jump scares",
    "gore", "subtitles", "talking animals", "courtroom scenes", "sports movies", "boxing movies",
    "space battles", "road trips", "true stories", "book adaptations", "remakes", "b-movies", "swearing",
    "shaky cam", "kung fu", "superheroes", "killer clowns", "aliens invading", "bank robberies",
)  # fmt: skip
_MUSIC_TOPICS = (
    "female vocalists", "male vocals", "vocals", "autotune", "guitar solos", "long instrumentals",
    "french music", "german lyrics", "spanish songs", "live recordings", "covers", "love songs",
    "breakup songs", "banjo", "screaming", "screamo", "underground stuff", "mainstream stuff",
    "one-hit wonders", "remixes", "workout music", "road trip songs", "lullabies", "sea shanties",
    "movie soundtracks", "film scores", "video game music", "christmas songs", "boy bands", "girl groups",
    "singer-songwriters", "protest songs", "drum solos", "sax solos", "bagpipes", "orchestral stuff",
    "lo-fi beats", "ska", "bluegrass", "gospel", "the radio hits", "chart stuff", "deep cuts", "b-sides",
)  # fmt: skip
_TOPIC_POSITIVE = _POSITIVE + (
    "anything with {x}", "anything w/ {x}", "i love {x}", "{x} stuff", "something with {x}", "more {x}",
    "big {x} fan here", "i'm a sucker for {x}",
)  # fmt: skip
_TOPIC_NEGATIVE = _NEGATIVE + (
    "i'm not a fan of {x}", "no {x} please", "less {x}", "{x} gets on my nerves", "nothing with {x}",
    "i can't stand {x}", "i could do without the {x}", "not big on {x}",
)  # fmt: skip
_NOTHING = (
    "what's the weather like", "thanks!", "hello there", "who are you?", "tell me a joke", "lol", "hmm",
    "ok", "how does this work?", "what time is it", "i'm bored", "good morning", "you're great",
    "asdf qwer", "jjjjjjj", "blah blah blah", "?!?!", "🙂🙂", "🎬🍿", "🎸🔥", "xyzzy plugh",
    "movies shorter than 90 minutes", "songs under three minutes", "i'm in a rush, quick ones only",
    "something my cat would like", "filmed in new zealand", "next episode", "download this for offline",
    "4k please", "shuffle", "volume up", "repeat that track", "show lyrics", "recommend something",
    "play something", "music", "movies", "who directed this?", "what year is this from?",
    "is this on netflix?", "how long is it?", "i'm going to europe next week", "my car broke down",
    "je voudrais un film", "quiero algo diferente", "ich möchte etwas anderes", "vorrei qualcosa di nuovo",
    "что-нибудь другое", "何か別のもの", "no sé qué quiero", "can you hear me", "test test",
    "what did i ask for earlier?", "is this thing on", "i don't know", "whatever", "surprise me",
    "turn the volume up", "skip this song", "show the lyrics", "make a playlist",
    "are there concert tickets?",
    "how long is this", "can i get subtitles", "pause", "next", "i need some fresh air", "brb",
    "what's your name", "nvm", "never mind", "can you recommend a restaurant", "is it raining",
    "turn on subtitles", "my popcorn is burning", "the wifi keeps dropping", "hold on, phone call",
    "log me out", "how do i change my password", "the screen froze", "dinner's ready, back soon",
    "is there a free trial", "my headphones died", "what's trending", "why is it buffering",
    "can you speak louder", "i'll be right back", "how much does this cost", "the app is slow today",
)  # fmt: skip
# Questions about a title, not wishes (the labelling contract: a question asks nothing of the feed).
_ITEM_QUESTIONS = (
    "who directed {x}?", "what year did {x} come out?", "is {x} on netflix?", "how long is {x}?",
    "who is in {x}", "when was {x} made", "is {x} any good?", "what's {x} about?",
    "did {x} win any oscars?", "where can i stream {x}", "who plays the lead in {x}?",
    "how old is {x}", "wait, is {x} a sequel?", "what rating does {x} have",
)  # fmt: skip
_ARTIST_QUESTIONS = (
    "when did {x} release their first album?", "is {x} touring this year?", "where is {x} from?",
    "how many albums does {x} have", "who is the singer of {x}?", "is {x} still together?",
    "what was {x}'s biggest hit?", "how old is {x}?", "did {x} ever play in berlin",
    "what label is {x} on", "are {x} tickets sold out?", "who wrote that {x} song",
)  # fmt: skip
_PREFIXES = (
    "hmm ", "ok so ", "honestly, ", "i think ", "please, ", "hey, ", "well, ", "actually, ", "so ",
    "ugh, ", "right, ", "tonight ", "for now ", "um, ", "you know what, ", "okay, ", "maybe ", "idk ",
    "tbh ", "ngl ", "lowkey ", "could you ", "hi! ", "yo ", "pls ", "hey there, ", "alright, ", "hmm, ",
    "ok ", "oh and ", "also ", "fine, ", "kinda ", "i guess ", "perhaps ",
)  # fmt: skip
_SUFFIXES = (
    " please", " tonight", " for a change", " thanks", "!", " if possible", " :)", " lol", ".", "...",
    " 🍿", " 😂", " 🙏", " 👻", " 😴", " ❤️", " 🤘", " 🎸", " thx", " pls", " rn", " tbh", " ok?", "!!",
    " thank you", " for tonight", " this time",
)  # fmt: skip
_CONNECTORS = (
    ", ", " and ", " but ", ". ", "; ", " - ", ", also ", " and also ", ", plus ", ", but ", " & ",
    " and then ", ". also ", ", and ",
)  # fmt: skip
_GENRE_NOUNS = ("", "", "", " movies", " films", " stuff", " flicks", " ones")
# What narrows a wanted genre beyond any catalog field ("british comedies", "documentaries about
# nature", "sci-fi w/ aliens"): the genre is hard, the qualifier a soft wish beside it.
_GENRE_QUALIFIERS_BEFORE = (
    "british", "french", "japanese", "korean", "italian", "spanish", "german", "australian", "indian",
    "irish", "swedish", "low-budget", "indie", "black and white", "silent", "oscar-winning", "cult",
    "big-budget", "foreign", "european", "small-town", "hong kong", "hollywood", "b-grade", "award-winning",
)  # fmt: skip
_GENRE_QUALIFIERS_AFTER = (
    "about {x}", "with {x}", "w/ {x}", "featuring {x}", "that have {x}", "with lots of {x}", "involving {x}",
    "where there are {x}",
)  # fmt: skip
_GENRE_THEMES = (
    "nature", "the ocean", "space", "dogs", "horses", "food", "chess", "a heist", "the mafia", "aliens",
    "robots", "pirates", "dinosaurs", "trains", "boxing", "baseball", "a road trip", "time travel",
    "twins", "a wedding", "a big city", "small towns", "spies", "treasure", "submarines", "the jungle",
    "ghosts", "the desert", "islands", "kings and queens", "lawyers", "doctors", "journalists",
)  # fmt: skip
_MUSIC_NOUNS = ("", "", " music", " stuff", " songs", " tracks")
_YEAR_NOUNS_BEFORE = ("", "movies ", "films ", "stuff ", "something ", "anything ")


@dataclass(frozen=True)
class Planted:
    """A span the simulator wrote and what it means."""

    mention: Mention
    role: Role


@dataclass(frozen=True)
class SimulatedCommand:
    text: str
    planted: tuple[Planted, ...]
    reset: bool = False
    soft_positive: bool = False
    soft_negative: bool = False
    expected: PreferenceUpdate | None = None
    """None: nothing in the text can be applied (a correct parser abstains)."""
    soft_spans: tuple[tuple[int, int, Role], ...] = ()
    """Free-text wish clauses (start, end, the side's role): a mood word the look-up finds in one
    ("no gore", "summery stuff") is meant on that clause's side."""


@dataclass
class _Clause:
    text: str
    planted: list[tuple[int, int, Mention, Role]] = field(default_factory=list)
    reset: bool = False
    soft_positive: bool = False
    soft_negative: bool = False


class CommandSimulator:
    """Draws commands over one catalog; ``split`` picks the template share."""

    def __init__(self, index: CatalogIndex, *, split: Split, seed: int):
        self.index = index
        self.rng = random.Random(seed)
        self.split = split
        self.genres = [g for g in index.genres if g.casefold() != "unknown"]
        years = [item.year for item in index.catalog.items if item.year]
        self.years = (min(years), max(years)) if years else None
        self.titled = [item for item in index.catalog.items if item.title and len(item.title) > 1]
        self._genre_surfaces = {g: [w for w, gs in GENRE_WORDS.items() if gs == (g,)] for g in self.genres}
        self._pair_surfaces = [
            (w, gs) for w, gs in GENRE_WORDS.items() if len(gs) == 2 and all(g in self.genres for g in gs)
        ]
        moods = sorted(
            {w for w in MOOD_WORDS if " " not in w} | ({"rock", "jazz", "pop"} if not self.genres else set())
        )
        # qualifiers and themes that would be read as a genre or mood of their own are left out
        looked_up = {fold(w) for w in (*GENRE_WORDS, *MOOD_WORDS)}
        self._qualifiers_before = [q for q in _GENRE_QUALIFIERS_BEFORE if not set(q.split()) & looked_up]
        self._themes = [x for x in _GENRE_THEMES if not set(x.split()) & looked_up]
        no_fields = list(STYLE_WORDS) if not self.genres else []
        self.moods = (
            moods + no_fields + (["80s", "90s", "70s", "60s", "the eighties"] if not self.years else [])
        )

    def _pick(self, templates: Sequence[str]) -> str:
        held_out = self.split == "val"
        share = [t for i, t in enumerate(templates) if (i % 4 == 3) == held_out]
        return self.rng.choice(share or list(templates))

    def draw(self) -> SimulatedCommand:
        rng = self.rng
        if rng.random() < 0.09:
            return self._nothing()
        n = rng.choices((1, 2, 3), weights=(0.45, 0.4, 0.15))[0]
        clauses = []
        if rng.random() < 0.07:
            clauses.append(_Clause(self._pick(_RESET), reset=True))
            n = rng.choice((0, 1, 1))
        used: set[object] = set()
        for _ in range(n):
            clause = self._clause(used)
            if clause is not None:
                clauses.append(clause)
        if not clauses:
            return self._nothing()
        return self._join(clauses)

    # --- clauses -------------------------------------------------------------------------------

    def _clause(self, used: set[object]) -> _Clause | None:
        rng = self.rng
        kinds = ["item", "mood", "free", "topic"]
        weights = [0.3, 0.15, 0.08, 0.1]
        if self.genres:
            kinds.append("genre")
            weights.append(0.45)
        if self.years:
            kinds.append("year")
            weights.append(0.28)
        kind = rng.choices(kinds, weights=weights)[0]
        if kind == "genre":
            if self.years and rng.random() < 0.15:
                return self._genre_year_clause(used)
            if rng.random() < 0.06:
                return self._genre_anchor_clause(used)
            if rng.random() < 0.08:
                return self._qualified_genre_clause(used)
            return self._genre_clause(used)
        if kind == "year":
            return self._year_clause()
        if kind == "item":
            if not self.genres and rng.random() < 0.15:
                return self._artist_list_clause(used)
            return self._item_clause(used)
        if kind == "mood":
            return self._mood_clause(used)
        if kind == "topic":
            return self._topic_clause(used)
        return self._free_clause()

    def _role(self, weights: tuple[float, float, float] = (0.42, 0.43, 0.15)) -> Role:
        return self.rng.choices((Role.POSITIVE, Role.NEGATIVE, Role.LIFT), weights=weights)[0]

    def _templates(self, role: Role) -> Sequence[str]:
        return {Role.POSITIVE: _POSITIVE, Role.NEGATIVE: _NEGATIVE, Role.LIFT: _LIFT}[role]

    def _unused_genre(self, used: set[object]) -> tuple[str, str] | None:
        """A genre no other clause of the command names, marked used, and a word for it."""
        genre = self.rng.choice(self.genres)
        if genre in used or not self._genre_surfaces[genre]:
            return None
        used.add(genre)
        return genre, self.rng.choice(self._genre_surfaces[genre])

    def _genre_clause(self, used: set[object]) -> _Clause | None:
        rng = self.rng
        role = self._role()
        objects: list[tuple[str, tuple[str, ...]]] = []
        if self._pair_surfaces and rng.random() < 0.08:
            objects.append(rng.choice(self._pair_surfaces))
        else:
            for _ in range(rng.choices((1, 2), weights=(0.8, 0.2))[0]):
                drawn = self._unused_genre(used)
                if drawn is not None:
                    objects.append((drawn[1], (drawn[0],)))
        if not objects:
            return None
        noun = rng.choice(_GENRE_NOUNS)
        parts = [(self._noise(word), genres) for word, genres in objects]
        # "crime dramas", "action comedies": two genre words side by side want both
        joiner = rng.choice((" and ", " or ", ", ", " & ", " ", " + ", " or ")) if len(parts) > 1 else ""
        template = self._pick(self._templates(role))
        pieces: list[tuple[str, tuple[str, ...] | None]] = []
        for i, (word, genres) in enumerate(parts):
            if i:
                pieces.append((joiner, None))
            pieces.append((word, genres))
        pieces.append((noun, None))
        return self._fill(template, pieces, _genre_mention, role)

    def _year_clause(self) -> _Clause:
        rng = self.rng
        role = self._role((0.5, 0.35, 0.15))
        surface, years, form = self._year_surface()
        before, after = "", ""
        if form in ("recent", "old"):
            after = rng.choice((" movies", " films", " stuff", " ones", ""))
        elif form in ("before", "after", "since", "between"):
            before = rng.choice(
                ("", "movies ", "films ", "something ", "anything ", "stuff ", "movies made ")
            )
        elif rng.random() < 0.45:  # "90s movies", "80s stuff": the bare decade as an adjective
            after = rng.choice((" movies", " films", " stuff", " flicks", ""))
        else:
            before = rng.choice(("from ", "movies from ", "films from ", "stuff from ", "something from "))
        template = self._pick(self._templates(role))
        pieces = [(before, None), (surface, years), (after, None)]
        return self._fill(template, pieces, lambda y, s, e, t: Mention("year", s, e, t, years=y), role)

    def _artist_list_clause(self, used: set[object]) -> _Clause | None:
        """Two or three artists named together ("Amy Winehouse and Adele", "oasis or blur, either"):
        on a music catalog, each is wanted itself."""
        rng = self.rng
        items = rng.sample(self.titled, rng.choice((2, 2, 3)))
        if any(item.id in used for item in items):
            return None
        used |= {item.id for item in items}
        lower = rng.random() < 0.4
        pieces: list[tuple[str, tuple[int, ...] | None]] = [
            (rng.choice(("", "", "more ", "some ", "play ")), None)
        ]
        for i, item in enumerate(items):
            if i:
                last = i == len(items) - 1
                pieces.append(
                    (rng.choice((" and ", " or ", " & ")) if last else rng.choice((", ", " ")), None)
                )
            pieces.append((item.title.lower() if lower else item.title, (item.id,)))
        pieces.append((rng.choice(("", "", ", either", " please", " all day", " tonight")), None))
        return self._fill(
            "{x}", pieces, lambda ids, s, e, t: Mention("item", s, e, t, items=ids), Role.POSITIVE
        )

    def _genre_anchor_clause(self, used: set[object]) -> _Clause | None:
        """A wanted genre anchored on a title ("westerns like Unforgiven", "comedies like Clueless",
        "a Fargo-type crime movie"): the genre is hard, the title a taste anchor."""
        rng = self.rng
        genre, item = rng.choice(self.genres), rng.choice(self.titled)
        if genre in used or item.id in used or not self._genre_surfaces[genre]:
            return None
        used |= {genre, item.id}
        word = self._noise(rng.choice(self._genre_surfaces[genre]))
        title = item.title.lower() if rng.random() < 0.3 else item.title
        g, t = (word, ("genre", (genre,))), (title, ("item", (item.id,)))
        noun = rng.choice(("", "", " movies", " films"))
        shape = rng.randrange(5)
        if shape == 0:
            pieces = [g, (noun + " like ", None), t]
        elif shape == 1:
            pieces = [("more ", None), g, (noun + " like ", None), t]
        elif shape == 2:
            pieces = [("a ", None), t, ("-type ", None), g]
        elif shape == 3:
            pieces = [("something like ", None), t, (" but ", None), g]
        else:
            pieces = [g, (" in the style of ", None), t]
        text, planted = "", []
        for piece, value in pieces:
            if value is not None:
                kind, v = value
                end = len(text) + len(piece)
                if kind == "genre":
                    mention, role = Mention("genre", len(text), end, piece, genres=v), Role.POSITIVE
                else:
                    mention, role = Mention("item", len(text), end, piece, items=v), Role.SOFT_POSITIVE
                planted.append((len(text), end, mention, role))
            text += piece
        return _Clause(text, planted)

    def _qualified_genre_clause(self, used: set[object]) -> _Clause | None:
        """A wanted genre narrowed by what no field holds ("british comedies", "black and white
        westerns", "documentaries about nature"): the genre hard, the whole phrase a soft wish."""
        rng = self.rng
        drawn = self._unused_genre(used)
        if drawn is None:
            return None
        genre, word = drawn[0], self._noise(drawn[1])
        noun = rng.choice(_GENRE_NOUNS)
        lead = rng.choice(("", "", "some ", "i want ", "any ", "more "))
        if rng.random() < 0.4:
            pieces = [(f"{lead}{self._pick(self._qualifiers_before)} ", None), (word, (genre,)), (noun, None)]
        else:
            after = self._pick(_GENRE_QUALIFIERS_AFTER).replace("{x}", self._pick(self._themes))
            pieces = [(lead, None), (word, (genre,)), (f"{noun} {after}", None)]
        clause = self._fill("{x}", pieces, _genre_mention, Role.POSITIVE)
        clause.soft_positive = True
        return clause

    def _genre_year_clause(self, used: set[object]) -> _Clause | None:
        """A genre and an era in one phrase ("90s comedies", "old westerns", "dramas from the 80s"):
        both wanted (a refusal of the pair, "no old westerns", is not a refusal of either alone)."""
        rng = self.rng
        drawn = self._unused_genre(used)
        if drawn is None:
            return None
        genre, word = drawn[0], self._noise(drawn[1])
        surface, years, form = self._year_surface()
        if form not in ("decade", "modified", "recent", "old", "pair"):
            return None
        noun = rng.choice(("", "", " movies", " films", " stuff"))
        role = rng.choices((Role.POSITIVE, Role.LIFT), weights=(0.93, 0.07))[0]
        template = self._pick(self._templates(role))
        genre_piece = (word, ("genre", (genre,)))
        year_piece = (surface, ("year", years))
        if form in ("recent", "old") or rng.random() < 0.5:
            pieces = [year_piece, (" ", None), genre_piece, (noun, None)]
        else:
            pieces = [genre_piece, (noun + " from ", None), year_piece]

        def make(value, s, e, t):
            kind, v = value
            if kind == "genre":
                return Mention("genre", s, e, t, genres=v)
            return Mention("year", s, e, t, years=v)

        return self._fill(template, pieces, make, role)

    def _year_surface(self) -> tuple[str, YearRange, str]:
        rng = self.rng
        low, high = self.years or (1930, 1998)
        decade = rng.choice([d for d in range(max(1920, low - low % 10), high + 1, 10)])
        short = str(decade)[2:]
        names = {start: name for name, start in DECADE_NAMES.items()}
        year = rng.randint(max(low, 1940), high - 1)
        form = rng.choices(
            ["decade", "modified", "pair", "before", "after", "since", "between", "recent", "old", "year"],
            weights=[0.3, 0.08, 0.06, 0.1, 0.1, 0.08, 0.06, 0.09, 0.09, 0.04],
        )[0]
        decade_words = [f"the {short}s", f"the '{short}s", f"{decade}s", f"the {decade}s", f"{short}s"]
        if decade in names:
            decade_words.append(f"the {names[decade]}")
        if form == "decade":
            return rng.choice(decade_words), YearRange(start=decade, end=decade + 9), form
        if form == "modified":
            mod = rng.choice(("early", "late"))
            word = rng.choice([f"{short}s", names.get(decade, f"{short}s")])
            years = (
                YearRange(start=decade, end=decade + 4)
                if mod == "early"
                else YearRange(start=decade + 5, end=decade + 9)
            )
            return f"the {mod} {word}", years, form
        if form == "pair" and decade + 10 <= high:
            nxt = str(decade + 10)[2:]
            return (
                f"the {short}s {rng.choice(('or', 'and'))} {nxt}s",
                YearRange(start=decade, end=decade + 19),
                form,
            )
        if form == "before":
            word = rng.choice(("before", "older than", "pre-", "earlier than"))
            return (f"{word}{year}" if word == "pre-" else f"{word} {year}"), YearRange(end=year - 1), form
        if form == "after":
            word = rng.choice(("after", "newer than", "later than"))
            return f"{word} {year}", YearRange(start=year + 1), form
        if form == "since":
            return (
                rng.choice((f"since {year}", f"from {year} on", f"{year} or later", f"{year} onwards")),
                YearRange(start=year),
                form,
            )
        if form == "between":
            a, b = sorted(rng.sample(range(max(low, 1940), high + 1), 2))
            return (
                rng.choice((f"between {a} and {b}", f"{a}-{b}", f"from {a} to {b}")),
                YearRange(start=a, end=b),
                form,
            )
        if form == "recent":
            return rng.choice(RECENT_WORDS), YearRange(start=high - RECENT_SPAN), form
        if form == "old":
            return rng.choice(OLD_WORDS), YearRange(end=OLD_END), form
        return str(year), YearRange(start=year, end=year), form

    def _item_clause(self, used: set[object]) -> _Clause | None:
        rng = self.rng
        item = rng.choice(self.titled)
        if item.id in used:
            return None
        used.add(item.id)
        roles = [Role.NEGATIVE, Role.LIFT, Role.SOFT_POSITIVE, Role.SOFT_NEGATIVE, Role.POSITIVE]
        music = not self.genres
        weights = [0.25, 0.08, 0.32, 0.08, 0.27 if music else 0.15]
        role = rng.choices(roles, weights=weights)[0]
        # The contract: on a music catalog "more X" / "play X" / a bare name want the artist itself; on
        # a film catalog asking for a title wants it, and "more X" / "X vibes" use it as a taste anchor.
        templates = {
            Role.NEGATIVE: _ITEM_NEGATIVE + (_ARTIST_NEGATIVE_EXTRA if music else ()),
            Role.LIFT: _LIFT,
            Role.SOFT_POSITIVE: _ITEM_SOFT_POSITIVE
            + (_ARTIST_SOFT_POSITIVE_EXTRA if music else _MOVIE_SOFT_POSITIVE),
            Role.SOFT_NEGATIVE: _ITEM_SOFT_NEGATIVE,
            Role.POSITIVE: (_ITEM_POSITIVE + _ARTIST_POSITIVE_EXTRA) if music else _MOVIE_POSITIVE,
        }[role]
        title = item.title
        if rng.random() < 0.25:
            title = title.lower()
        template = self._pick(templates)
        pieces = [(title, (item.id,)), ("", None)]
        return self._fill(template, pieces, lambda ids, s, e, t: Mention("item", s, e, t, items=ids), role)

    def _mood_clause(self, used: set[object]) -> _Clause | None:
        rng = self.rng
        word = rng.choice(self.moods)
        if word in used:
            return None
        used.add(word)
        role = rng.choices((Role.POSITIVE, Role.NEGATIVE), weights=(0.6, 0.4))[0]
        templates = _MOOD_POSITIVE if role is Role.POSITIVE else _MOOD_NEGATIVE
        mood = MOOD_WORDS.get(word, word)
        template = self._pick(templates)
        pieces = [(word, mood), ("", None)]
        return self._fill(template, pieces, lambda m, s, e, t: Mention("mood", s, e, t, mood=m), role)

    def _topic_clause(self, used: set[object]) -> _Clause | None:
        """A person, theme or quality the catalog has no field for, wanted or not ("anything w/ tom
        hanks", "no jump scares", "less autotune"): soft text on its side, nothing hard."""
        rng = self.rng
        topic = rng.choice(_MUSIC_TOPICS if not self.genres else _MOVIE_TOPICS)
        if topic in used:
            return None
        used.add(topic)
        positive = rng.random() < 0.55
        template = self._pick(_TOPIC_POSITIVE if positive else _TOPIC_NEGATIVE)
        text = template.replace("{x}", topic)
        return _Clause(text, soft_positive=positive, soft_negative=not positive)

    def _free_clause(self) -> _Clause:
        if self.rng.random() < 0.7:
            return _Clause(self.rng.choice(_FREE_SOFT_POSITIVE), soft_positive=True)
        return _Clause(self.rng.choice(_FREE_SOFT_NEGATIVE), soft_negative=True)

    def _fill(self, template: str, pieces, make, role: Role) -> _Clause:
        head, tail = template.split("{x}")
        text, planted = head, []
        for piece, value in pieces:
            if value is not None:
                planted.append(
                    (
                        len(text),
                        len(text) + len(piece),
                        make(value, len(text), len(text) + len(piece), piece),
                        role,
                    )
                )
            text += piece
        return _Clause(text + tail, planted)

    def _noise(self, word: str) -> str:
        """A misspelling now and then (a letter dropped, doubled or swapped)."""
        rng = self.rng
        if len(word) < 6 or " " in word or rng.random() > 0.06:
            return word
        i = rng.randrange(1, len(word) - 1)
        op = rng.choice(("drop", "double", "swap"))
        if op == "drop":
            return word[:i] + word[i + 1 :]
        if op == "double":
            return word[:i] + word[i] + word[i:]
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

    # --- whole commands --------------------------------------------------------------------------

    def _nothing(self) -> SimulatedCommand:
        if self.rng.random() < 0.3:
            return self._question()
        return SimulatedCommand(self._case(self._pick(_NOTHING)), ())

    def _question(self) -> SimulatedCommand:
        """A question about a title names it without wanting it: the title's span has no role."""
        item = self.rng.choice(self.titled)
        title = item.title.lower() if self.rng.random() < 0.25 else item.title
        template = self._pick(_ITEM_QUESTIONS if self.genres else _ARTIST_QUESTIONS)
        pieces = [(title, (item.id,)), ("", None)]
        clause = self._fill(
            template, pieces, lambda ids, s, e, t: Mention("item", s, e, t, items=ids), Role.NONE
        )
        planted = tuple(Planted(m, role) for _s, _e, m, role in clause.planted)
        return SimulatedCommand(self._case(clause.text), planted)

    def _join(self, clauses: list[_Clause]) -> SimulatedCommand:
        rng = self.rng
        text = rng.choice(_PREFIXES) if rng.random() < 0.25 else ""
        planted: list[Planted] = []
        soft_spans: list[tuple[int, int, Role]] = []
        for i, clause in enumerate(clauses):
            if i:
                text += ": " if clauses[i - 1].reset and rng.random() < 0.4 else rng.choice(_CONNECTORS)
            offset = len(text)
            text += clause.text
            if clause.soft_positive or clause.soft_negative:
                side = Role.POSITIVE if clause.soft_positive else Role.NEGATIVE
                soft_spans.append((offset, len(text), side))
            for start, end, mention, role in clause.planted:
                moved = Mention(
                    mention.kind, start + offset, end + offset, mention.text, mention.genres, mention.years,
                    mention.items, mention.mood,
                )  # fmt: skip
                planted.append(Planted(moved, role))
        if rng.random() < 0.2:
            text += rng.choice(_SUFFIXES)
        text = self._case(text)
        reset = any(c.reset for c in clauses)
        soft_pos, soft_neg = any(c.soft_positive for c in clauses), any(c.soft_negative for c in clauses)
        reading = Reading(
            [p.mention for p in planted], [p.role for p in planted], reset=reset,
            soft_positive=clauses_text(clauses, "positive"), soft_negative=clauses_text(clauses, "negative"),
        )  # fmt: skip
        expected = assemble(reading, self.index)
        return SimulatedCommand(text, tuple(planted), reset, soft_pos, soft_neg, expected, tuple(soft_spans))

    def _case(self, text: str) -> str:
        """Casing as people type: as is, a capital first letter, Title Case now and then, rarely CAPS."""
        r = self.rng.random()
        if r < 0.35:
            return text[:1].upper() + text[1:]
        if r < 0.42:
            return text.title()
        if r < 0.45:
            return text.upper()
        return text


def _genre_mention(genres: tuple[str, ...], start: int, end: int, text: str) -> Mention:
    return Mention("genre", start, end, text, genres=genres)


def clauses_text(clauses: Sequence[_Clause], side: str) -> str | None:
    wanted = [c.text for c in clauses if (c.soft_positive if side == "positive" else c.soft_negative)]
    return "; ".join(wanted) or None


def label_roles(found: Sequence[Mention], command: SimulatedCommand) -> list[Role]:
    """Each found mention gets the role of the planted span it overlaps (of the same kind); a mood
    word inside a free-text wish gets that wish's side; anything else none."""
    roles = []
    for mention in found:
        role = Role.NONE
        for p in command.planted:
            same_kind = p.mention.kind == mention.kind or {p.mention.kind, mention.kind} == {"year", "mood"}
            if same_kind and overlaps(mention, p.mention):
                role = p.role
                break
        else:
            if mention.kind == "mood":
                role = next(
                    (r for s, e, r in command.soft_spans if s <= mention.start and mention.end <= e), role
                )
        roles.append(role)
    return roles


def simulate(index: CatalogIndex, n: int, *, split: Split, seed: int) -> list[SimulatedCommand]:
    simulator = CommandSimulator(index, split=split, seed=seed)
    return [simulator.draw() for _ in range(n)]


__all__ = [
    "CommandSimulator",
    "MentionKind",
    "Planted",
    "SimulatedCommand",
    "fold",
    "label_roles",
    "simulate",
]
