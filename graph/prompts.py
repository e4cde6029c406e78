"""Every prompt of the LLM agents, as named templates with named placeholders.

Role-play plus step-by-step reasoning, as in AFL (arXiv 2410.20027, Appendix):
the recommendation agent plays a recommender that sees the user's history, the
candidates, the rec model's pick and its memory of rejected rounds; the user
agent plays the user, sees the proposal, the reward model's view and its own
memory (which the reference code forgets to pass). Answers are structured data
(see graph/agents/llm.py); the JSON shape is also spelled out in the text
because ``json_mode`` servers only get the instruction, not the schema.
"""

from __future__ import annotations

REC_SYSTEM = (
    "You are a recommendation agent. You know the user's {domain} history and a list of candidate "
    "{item_kind}s. Your job is to recommend exactly one candidate the user will pick next, and to say "
    "why in one or two sentences the user can check against their history. Think step by step: what "
    "does the history say about the user's taste, what does the recommendation model suggest, what did "
    "the user reject before and why, and which candidate fits best. You may argue again for an item the "
    "user rejected if you have a new argument, but you must only recommend an item from the candidate "
    "list, by its id."
)

REC_USER = """The user's history, oldest first:
{history}

Candidates (id in brackets):
{candidates}

{prior}

{memory}

{preferences}

Answer with a JSON object {{"thoughts": "<your step-by-step reasoning>", "item_id": <candidate id>, \
"reason": "<why this item, in one or two sentences>"}}."""

REC_PRIOR = (
    "A recommendation model trained on many users suggests: {prior}. It is often right, but not always."
)
REC_NO_PRIOR = "No recommendation model is available; rely on the history."

USER_SYSTEM = (
    "You are a user of a {domain} recommender. Your history below is who you are: judge each "
    "recommendation as this user would, honestly and consistently with what you rejected before. Think "
    "step by step: compare the recommended {item_kind} with your history and your past reactions, weigh "
    "the reward model's view, then accept it or reject it and say why in one or two sentences. When you "
    "reject, say what you would rather have."
)

USER_JUDGE = """Your history, oldest first:
{history}

The recommender proposes: {item}
Its reason: {rec_reason}

{reward}

{memory}

{preferences}

Answer with a JSON object {{"thoughts": "<your step-by-step reasoning>", "decision": "accept" or "reject", \
"reason": "<why, in one or two sentences>"}}."""

REWARD_TOP_PICKS = """A reward model that knows your taste ranks the proposal {rank} of {n} candidates; \
its top picks for you are:
{top_picks}"""
REWARD_SCORE = (
    "A reward model gives the proposal a score of {score:.3f} (higher means more likely to suit you). "
    "The reward model is not always right."
)
REWARD_NONE = "No reward model is available; rely on your history."

USER_JUDGE_ITEMS = """Your history, oldest first:
{history}

{memory}

{preferences}

For each item below, say whether you would interact with it (true) or not (false):
{items}

Answer with a JSON object {{"thoughts": "<your step-by-step reasoning>", \
"decisions": [{{"item_id": <id>, "like": true or false}}, ... one entry per item]}}."""

MEMORY_HEADER = "What happened in earlier rounds (you may have rejected these):"
MEMORY_ENTRY = "- Proposed: {item}. Recommender's reason: {rec_reason} User's answer: {user_reason}"
MEMORY_EMPTY = "No earlier rounds."
MEMORY_SHOWN = 20  # newest entries shown; older ones stay in the state but leave the prompt

PREFERENCES = "The user's stated preferences (hard constraints must hold): {preferences}"
NO_PREFERENCES = ""

RETRY_FEEDBACK = """Your previous answer could not be used: {error}
Answer again with a valid JSON object as described above."""

DOMAINS = {
    "movielens": ("movie", "movie"),
    "lastfm": ("music", "artist"),
    "steam": ("video game", "game"),
}
DEFAULT_DOMAIN = ("item", "item")
