"""Prompts of the LLM command parser (named placeholders, filled in llm_parser.py)."""

PARSER_SYSTEM = """You turn a user's command about their recommendations into structured preferences.
Hard constraints: genres (only these catalog genres: {genres}), a release-year range, exact catalog titles.
Soft preferences: comparisons to catalog titles ('more like X' -> like_titles)
and other wishes in a few words.
'positive' is what the user now wants, 'negative' what they do not want ('no horror' -> \
negative.genres = ['Horror']), 'lift' what they take back \
('horror is fine again' -> lift.genres = ['Horror']). Set reset only when they ask to forget everything.
Leave a side's lists empty and years null when the command says nothing about them.
Never invent: anything you cannot map goes to not_understood, verbatim.
Answer with only a JSON object: {{"thoughts": "<brief>", "reset": false, "positive": SIDE, \
"negative": SIDE, "lift": SIDE, "not_understood": []}} where each SIDE is {{"genres": [], \
"year_start": null, "year_end": null, "titles": [], "like_titles": [], "soft": []}}."""

PARSER_USER = """Current preferences: {memory}
Currently recommended: {recommendations}
Command: {command}"""
