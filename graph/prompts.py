"""Every prompt of the LLM agents, as named templates with named placeholders.

Role-play plus brief step-by-step reasoning, as in AFL (arXiv 2410.20027, Appendix): the
recommendation agent plays a recommender that sees the user's history, the candidates, the rec
model's pick and its memory of rejected rounds; the user agent plays the user, sees the proposal,
the reward model's view and its own memory (which the reference code forgets to pass).

**Layout for prompt caching.** Each call is three messages, from the least to the most changing:
the system message (the role and the answer's shape: the same for every call of that agent), the
loop's context (history, candidates, the prior, the reward model's top picks, preferences: the
same for every round of a loop), and the round (memory, the proposal: new each round). Servers
with prefix caching (llama.cpp, vLLM, OpenAI) then reuse the first two on rounds 2..n and
across the agents' retries.

The JSON shape is also spelled out in the system message because ``json_mode`` servers only
get the instruction, not the schema.
"""

from __future__ import annotations

REC_SYSTEM = (
    "You are a recommendation agent for {domain}. From the user's history and a list of candidate "
    "{item_kind}s, recommend exactly one candidate the user will pick next, by its id, and say why "
    "in one short sentence the user can check against their history. Weigh the history, the "
    "recommendation model's suggestion, and what the user rejected before and why. You may argue "
    "again for a rejected item only with a new argument.\n{answer_format}"
)

REC_CONTEXT = """The user's history, oldest first:
{history}

Candidates ([id] title):
{candidates}

{prior}{preferences}"""

REC_ROUND = """{memory}

Round {round}: recommend one candidate."""

REC_PRIOR = "A recommendation model trained on many users ranks this candidate first: {prior}."
REC_NO_PRIOR = "No recommendation model is available; rely on the history."

USER_SYSTEM = (
    "You are a user of a {domain} recommender; the history below is who you are. Judge each "
    "recommended {item_kind} as this user would, consistently with what you rejected before: compare "
    "it with your history, weigh the reward model's view, then accept or reject it and say why in one "
    "short sentence of your own words. When you reject, say what you would rather have.\n{answer_format}"
)

USER_CONTEXT = """Your history, oldest first:
{history}

{reward}{preferences}"""

USER_ROUND = """{memory}

Round {round}. The recommender proposes: {item}
Its reason: {rec_reason}
{reward_verdict}"""

REWARD_TOP_PICKS = """A reward model that knows your taste ranks {n} candidates; its top picks for you:
{top_picks}"""
REWARD_TOP_PICKS_VERDICT = "The reward model ranks this proposal {rank} of {n}."
REWARD_SCORE = (
    "A reward model scores each proposal for you (higher means more likely to suit you); "
    "it is not always right."
)
REWARD_SCORE_VERDICT = "The reward model scores this proposal {score:.3f}."
REWARD_NONE = "No reward model is available; rely on your history."

USER_JUDGE_ITEMS = """Your history, oldest first:
{history}

{memory}{preferences}

For each item below, say whether you would interact with it (true) or not (false):
{items}"""

MEMORY_HEADER = "Earlier rounds (proposals that were rejected):"
MEMORY_ENTRY = "- {item}. Recommender: {rec_reason} User: {user_reason}"
MEMORY_EMPTY = "No earlier rounds."
MEMORY_SHOWN = 10  # newest entries shown; older ones stay in the state but leave the prompt
MEMORY_REASON_CHARS = 160  # reasons are shown shortened: the memory grows with every round

PREFERENCES = "\n\nThe user's stated preferences (hard constraints must hold): {preferences}"
NO_PREFERENCES = ""

# The answer's shape in words; the fields match the schemas in graph/agents/llm.py.
ANSWER_FORMAT = "Answer with only a JSON object: {{{fields}}}"
THOUGHTS_FIELD = '"thoughts": "<brief reasoning, at most {chars} characters>"'
REC_FIELDS = '"item_id": <candidate id>, "reason": "<one sentence, at most {chars} characters>"'
USER_FIELDS = '"decision": "accept" or "reject", "reason": "<one sentence, at most {chars} characters>"'
ITEMS_FIELDS = '"decisions": [{{"item_id": <id>, "like": true or false}}, ... one per listed item]'

DOMAINS = {
    "movielens": ("movies", "movie"),
    "lastfm": ("music", "artist"),
    "steam": ("video games", "game"),
}
DEFAULT_DOMAIN = ("items", "item")
