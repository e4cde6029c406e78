"""The command simulator's phrasing bank: the templates, topics and fillers it writes commands with.

A template's ``{x}`` is where the simulator puts what a clause is about (a genre word, an era, a title,
a mood word); what those words mean is the lexicon's (:mod:`steering.lexicon`), never these tables'.
Every fourth template of a table is held out of training (``CommandSimulator._pick``), so validation
reads phrasings the student never saw. The order of every table is part of the simulation: the same
seed draws the same commands only from the same tables in the same order.
"""

from __future__ import annotations

POSITIVE = (
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
NEGATIVE = (
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
LIFT = (
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
ITEM_POSITIVE = (
    "play more {x}", "i want {x}", "more {x}", "put on some {x}", "i'd like to hear {x}", "play {x}",
    "give me {x}", "i'm in the mood for {x}", "some {x} please", "i love {x}, more of it",
    "queue up {x}", "i want to listen to {x}", "let's hear {x}", "more {x} please", "{x} please",
)  # fmt: skip
MOVIE_POSITIVE = (
    "show me {x}", "put on {x}", "i want to rewatch {x}", "{x}!", "i want to watch {x}", "let's watch {x}",
    "can you put on {x}", "play {x}", "i'd like to see {x}", "queue up {x}", "watch {x}", "{x} please",
    "is {x} on here?", "find me {x}", "i want {x}", "can we watch {x}", "pull up {x}", "start {x}",
)  # fmt: skip
MOVIE_SOFT_POSITIVE = (
    "more {x}", "{x} vibes", "i liked {x}", "{x} is my favorite", "i loved {x}", "something like {x}",
    "more stuff like {x}", "{x} type of thing", "i really enjoyed {x}", "big fan of {x}",
    "{x} was great, more of that", "similar to {x} please",
)  # fmt: skip
ARTIST_POSITIVE_EXTRA = (
    "{x}", "{x}!", "{x} pls", "more {x}!", "i need {x}", "{x} now", "some {x}?", "i'm feeling {x} today",
    "blast some {x}", "crank up {x}", "throw on some {x}",
)  # fmt: skip
ARTIST_SOFT_POSITIVE_EXTRA = (
    "{x} vibes", "{x} type stuff", "{x}-esque", "{x} fan here", "sounds like {x}",
    "stuff that sounds like {x}", "artists like {x}", "bands like {x}",
)  # fmt: skip
ARTIST_NEGATIVE_EXTRA = (
    "less {x}", "{x} is overplayed", "{x} is annoying", "too much {x}", "{x} is too much", "less {x} please",
    "{x} is getting old", "i'm good on {x}", "no more {x} pls",
)  # fmt: skip
ITEM_NEGATIVE = (
    "no more {x}", "i never want to see {x} again", "don't show me {x}", "skip {x}", "not {x}",
    "i'm sick of {x}", "enough {x}", "remove {x}", "stop recommending {x}", "i can't stand {x}",
    "no {x} please", "i hate {x}", "get rid of {x}", "{x}? no thanks", "take {x} off the list",
    "i've seen {x} too many times", "i never want to hear {x} again", "stop playing {x}",
    "anything but {x}", "exclude {x}", "i'm done with {x}", "no {x}", "keep {x} out of it",
    "i don't want {x}", "spare me {x}", "hide {x}",
)  # fmt: skip
ITEM_SOFT_POSITIVE = (
    "more like {x}", "something similar to {x}", "stuff like {x}", "in the vein of {x}",
    "along the lines of {x}", "i loved {x}, more like that", "anything like {x}",
    "something that reminds me of {x}", "similar to {x}", "in the style of {x}", "things like {x} please",
    "more stuff like {x}", "give me something like {x}", "something close to {x}", "like {x}",
    "if you have anything like {x}", "i want more like {x}", "something with the vibe of {x}",
    "what else is like {x}?", "recommend things similar to {x}",
)  # fmt: skip
ITEM_SOFT_NEGATIVE = (
    "less like {x}", "nothing like {x}", "not like {x}", "nothing similar to {x}",
    "less stuff like {x}", "don't give me anything like {x}", "avoid things like {x}",
    "nothing in the style of {x}", "fewer things like {x}", "stay away from stuff like {x}",
    "not so much like {x}", "less of the {x} kind of thing",
)  # fmt: skip
MOOD_POSITIVE = (
    "something {x}", "more {x} stuff", "i want something {x}", "i'm in the mood for something {x}",
    "give me something {x}", "something a bit more {x}", "make it {x}", "more {x} please",
    "can it be more {x}?", "i need something {x} tonight", "keep it {x}", "something {x} would be good",
)  # fmt: skip
MOOD_NEGATIVE = (
    "nothing too {x}", "not so {x}", "less {x} stuff", "nothing {x}", "please nothing {x}",
    "not too {x}", "less {x}", "i don't want anything {x}", "nothing {x} tonight", "tone down the {x}",
    "no {x} stuff", "skip anything {x}",
)  # fmt: skip
RESET = (
    "start over", "forget everything i said", "reset", "let's start from scratch", "clear my preferences",
    "wipe everything", "scratch all that", "forget all my preferences", "reset everything", "start fresh",
    "let's begin again", "forget what i told you before", "clean slate please", "start again",
    "undo all my filters", "drop all my preferences", "forget it all", "back to square one",
    "new session", "forget my earlier picks", "ignore everything from before", "fresh start",
    "let's wipe the slate", "throw out what i said", "clear all that", "from scratch please",
    "disregard my previous requests", "reset my filters", "forget the last few things i said",
    "never mind all of that", "let's try again from zero", "cancel everything i asked for",
)  # fmt: skip
FREE_SOFT_POSITIVE = (
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
FREE_SOFT_NEGATIVE = (
    "nothing that makes me sad", "nothing too slow please", "nothing that keeps me up at night",
    "nothing too heavy on the brain", "nothing with a sad ending", "nothing that will put me to sleep",
)  # fmt: skip
# Wishes no catalog field holds, said without a mood or style word: the labelling contract keeps them
# as soft text on their side (people, themes, situations, qualities), never as abstentions.
FREE_SOFT_POSITIVE += (
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
FREE_SOFT_NEGATIVE += (
    "no gore", "nothing brainless", "no jump scares", "nothing with subtitles", "no sappy stuff",
    "nothing mainstream", "no vocals", "less autotune", "no love songs", "less mopey", "no screaming",
    "nothing overplayed", "no banjo stuff", "nothing from the radio", "no remixes", "not so much shouting",
    "less of the moody stuff", "no more breakup songs",
)  # fmt: skip
# People and themes a catalog has no field for: soft on whichever side the template puts them.
MOVIE_TOPICS = (
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
MUSIC_TOPICS = (
    "female vocalists", "male vocals", "vocals", "autotune", "guitar solos", "long instrumentals",
    "french music", "german lyrics", "spanish songs", "live recordings", "covers", "love songs",
    "breakup songs", "banjo", "screaming", "screamo", "underground stuff", "mainstream stuff",
    "one-hit wonders", "remixes", "workout music", "road trip songs", "lullabies", "sea shanties",
    "movie soundtracks", "film scores", "video game music", "christmas songs", "boy bands", "girl groups",
    "singer-songwriters", "protest songs", "drum solos", "sax solos", "bagpipes", "orchestral stuff",
    "lo-fi beats", "ska", "bluegrass", "gospel", "the radio hits", "chart stuff", "deep cuts", "b-sides",
)  # fmt: skip
TOPIC_POSITIVE = POSITIVE + (
    "anything with {x}", "anything w/ {x}", "i love {x}", "{x} stuff", "something with {x}", "more {x}",
    "big {x} fan here", "i'm a sucker for {x}",
)  # fmt: skip
TOPIC_NEGATIVE = NEGATIVE + (
    "i'm not a fan of {x}", "no {x} please", "less {x}", "{x} gets on my nerves", "nothing with {x}",
    "i can't stand {x}", "i could do without the {x}", "not big on {x}",
)  # fmt: skip
NOTHING = (
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
ITEM_QUESTIONS = (
    "who directed {x}?", "what year did {x} come out?", "is {x} on netflix?", "how long is {x}?",
    "who is in {x}", "when was {x} made", "is {x} any good?", "what's {x} about?",
    "did {x} win any oscars?", "where can i stream {x}", "who plays the lead in {x}?",
    "how old is {x}", "wait, is {x} a sequel?", "what rating does {x} have",
)  # fmt: skip
ARTIST_QUESTIONS = (
    "when did {x} release their first album?", "is {x} touring this year?", "where is {x} from?",
    "how many albums does {x} have", "who is the singer of {x}?", "is {x} still together?",
    "what was {x}'s biggest hit?", "how old is {x}?", "did {x} ever play in berlin",
    "what label is {x} on", "are {x} tickets sold out?", "who wrote that {x} song",
)  # fmt: skip
PREFIXES = (
    "hmm ", "ok so ", "honestly, ", "i think ", "please, ", "hey, ", "well, ", "actually, ", "so ",
    "ugh, ", "right, ", "tonight ", "for now ", "um, ", "you know what, ", "okay, ", "maybe ", "idk ",
    "tbh ", "ngl ", "lowkey ", "could you ", "hi! ", "yo ", "pls ", "hey there, ", "alright, ", "hmm, ",
    "ok ", "oh and ", "also ", "fine, ", "kinda ", "i guess ", "perhaps ",
)  # fmt: skip
SUFFIXES = (
    " please", " tonight", " for a change", " thanks", "!", " if possible", " :)", " lol", ".", "...",
    " 🍿", " 😂", " 🙏", " 👻", " 😴", " ❤️", " 🤘", " 🎸", " thx", " pls", " rn", " tbh", " ok?", "!!",
    " thank you", " for tonight", " this time",
)  # fmt: skip
CONNECTORS = (
    ", ", " and ", " but ", ". ", "; ", " - ", ", also ", " and also ", ", plus ", ", but ", " & ",
    " and then ", ". also ", ", and ",
)  # fmt: skip
GENRE_NOUNS = ("", "", "", " movies", " films", " stuff", " flicks", " ones")
# What narrows a wanted genre beyond any catalog field ("british comedies", "documentaries about
# nature", "sci-fi w/ aliens"): the genre is hard, the qualifier a soft wish beside it.
GENRE_QUALIFIERS_BEFORE = (
    "british", "french", "japanese", "korean", "italian", "spanish", "german", "australian", "indian",
    "irish", "swedish", "low-budget", "indie", "black and white", "silent", "oscar-winning", "cult",
    "big-budget", "foreign", "european", "small-town", "hong kong", "hollywood", "b-grade", "award-winning",
)  # fmt: skip
GENRE_QUALIFIERS_AFTER = (
    "about {x}", "with {x}", "w/ {x}", "featuring {x}", "that have {x}", "with lots of {x}", "involving {x}",
    "where there are {x}",
)  # fmt: skip
GENRE_THEMES = (
    "nature", "the ocean", "space", "dogs", "horses", "food", "chess", "a heist", "the mafia", "aliens",
    "robots", "pirates", "dinosaurs", "trains", "boxing", "baseball", "a road trip", "time travel",
    "twins", "a wedding", "a big city", "small towns", "spies", "treasure", "submarines", "the jungle",
    "ghosts", "the desert", "islands", "kings and queens", "lawyers", "doctors", "journalists",
)  # fmt: skip
