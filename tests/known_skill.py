"""An LLM of known skill, for tests and benchmarks only (never part of the service).

A :class:`tests.fake_openai.FakeOpenAI` whose default responder answers recloop's agent prompts
with valid structured output and is right with probability ``p``: the harness tells it the truth
(:meth:`KnownSkill.tell`: a history's held-out next item; :meth:`KnownSkill.tell_likes`: which
listed items a simulated user will interact with). When right it names the true next item, gives
the true verdict or the true like; otherwise a uniformly drawn other shown candidate, the opposite
verdict, the opposite like. Each coin is drawn from a hash of the request (reproducible; a retry or
a new round is a fresh coin), so its errors do not depend on the context: nothing here is shaped
to make the loop look good.

    skill = KnownSkill(p=0.8)
    with KnownSkillServer(skill) as server:   # a FakeOpenAI, base_url etc.
        skill.tell(book.history(row.history), row.next, describe.label(catalog, row.next))
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field

from fake_openai import FakeOpenAI, RecordedRequest, Reply

_HISTORY = re.compile(r"istory, oldest first:\n(.*?)(?:\n\n|$)", re.DOTALL)
_CANDIDATE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)
_PROPOSES = re.compile(r"The recommender proposes: (.*)\n")


@dataclass
class KnownSkill:
    p: float
    seed: int = 0
    next_items: dict[str, tuple[int, str]] = field(default_factory=dict)
    likes: dict[str, set[int]] = field(default_factory=dict)
    calls: int = 0

    def tell(self, history_text: str, next_item: int, next_label: str) -> None:
        """The held-out next item of the user whose prompt shows ``history_text``."""
        self.next_items[history_text] = (next_item, next_label)

    def tell_likes(self, history_text: str, positives: set[int]) -> None:
        self.likes[history_text] = set(positives)

    def _right(self, request: RecordedRequest) -> tuple[bool, random.Random]:
        digest = hashlib.sha256(f"{self.seed}\n{request.text}".encode()).digest()
        rng = random.Random(digest)
        return rng.random() < self.p, rng

    def __call__(self, request: RecordedRequest) -> Reply:
        self.calls += 1
        text = request.text
        found = _HISTORY.search(text)
        history = found.group(1) if found else ""
        right, rng = self._right(request)
        if '"item_id": <candidate id>' in text:
            section = text.split("Candidates ([id] title):", 1)[-1].split("\n\n", 1)[0]
            shown = [int(i) for i in _CANDIDATE.findall(section)]
            truth = self.next_items.get(history, (None, ""))[0]
            wrong = [c for c in shown if c != truth] or shown
            item = truth if right and truth in shown else rng.choice(wrong)
            return Reply.json(
                {"thoughts": "weighing the history", "item_id": item, "reason": "It fits the history."}
            )
        if '"decisions"' in text:
            section = text.split("say whether you would interact with it", 1)[-1]
            positives = self.likes.get(history, set())
            decisions = []
            for item in (int(i) for i in _CANDIDATE.findall(section)):
                item_right = rng.random() < self.p
                liked = item in positives
                decisions.append({"item_id": item, "like": liked if item_right else not liked})
            return Reply.json({"thoughts": "one by one", "decisions": decisions})
        proposed = _PROPOSES.search(text)
        truth_label = self.next_items.get(history, (None, None))[1]
        accept = proposed is not None and proposed.group(1).strip() == truth_label
        decision = "accept" if accept == right else "reject"
        reason = "It is what I wanted next." if decision == "accept" else "Not what I want next."
        return Reply.json({"thoughts": "comparing with my history", "decision": decision, "reason": reason})


def known_skill_server(skill: KnownSkill) -> FakeOpenAI:
    """A FakeOpenAI answering with ``skill``, listing itself as ``known-skill-p<p>`` (the model name
    the LLM weights are keyed by)."""
    return FakeOpenAI(skill, keep_alive=True, model_name=f"known-skill-p{skill.p:.2f}-s{skill.seed}")


def tell_next(skill: KnownSkill, catalog, history, next_item: int) -> None:
    """Tell the server the held-out next item after ``history`` (as the prompts render it)."""
    from graph import describe

    skill.tell(describe.bullets(catalog, list(history)), next_item, describe.label(catalog, next_item))


def tell_rows(skill: KnownSkill, catalog, rows) -> None:
    """:func:`tell_next` for dataset rows (``.history``, ``.next``)."""
    for row in rows:
        tell_next(skill, catalog, row.history, row.next)


def tell_cases(skill: KnownSkill, catalog, cases) -> None:
    """User simulation: each case's loop target and the items of its lists it will interact with."""
    from graph import describe

    for case in cases:
        tell_next(skill, catalog, case.rec_history, case.rec_target)
        positives = {
            i for lst in case.eval_lists.values() for i, y in zip(lst.items, lst.labels, strict=True) if y
        }
        skill.tell_likes(describe.bullets(catalog, list(case.init_history)), positives)


def tell_dataset(skill: KnownSkill, catalog) -> int:
    """Everything a harness on ``catalog`` may ask about, from its held-out data alone: every
    validation and test row's next item, and every such user's simulation truth (the loop's
    target and the future items, as :func:`tell_cases` tells them). The truth of a user-simulation
    case does not depend on the seed that draws its negatives, so seed 0 tells all seeds. Returns
    the number of histories told."""
    from graph.usersim import RATIOS, cases_from_rows

    for split in ("val", "test"):
        rows, _ = catalog.eval_rows(split)
        tell_rows(skill, catalog, rows)
        tell_cases(skill, catalog, cases_from_rows(rows, catalog.n_items, RATIOS, 0, 20, 20))
    return len(skill.next_items) + len(skill.likes)


def serve(argv: list[str] | None = None) -> None:
    """``python tests/known_skill.py serve --dataset lastfm --p 0.8 --port 8091``: the known-skill
    LLM as a standalone process for an evaluation run against it (bench only, never the service).
    It reads the imported dataset and tells itself the held-out truth (:func:`tell_dataset`),
    which is what the CI tests tell it in process; its errors stay independent of the context."""
    import argparse
    import contextlib
    import signal
    import threading

    from app.settings import get_settings
    from recmodels.dataset import Dataset

    parser = argparse.ArgumentParser(prog="known_skill.py serve", description=serve.__doc__)
    parser.add_argument("--dataset", required=True, help="Imported dataset whose truth to tell.")
    parser.add_argument("--p", type=float, required=True, help="Probability of a right answer.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=8091)
    args = parser.parse_args(argv)
    catalog = Dataset.open(get_settings().datasets_dir, args.dataset)
    skill = KnownSkill(p=args.p, seed=args.seed)
    told = tell_dataset(skill, catalog)
    server = FakeOpenAI(
        skill, keep_alive=True, model_name=f"known-skill-p{skill.p:.2f}-s{skill.seed}", port=args.port
    )
    server.requests = _Discarded()  # a long run would otherwise keep every request
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with server:
        print(f"known-skill LLM p={args.p} on {server.base_url} ({told} histories told)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stopped.wait()
    print(f"answered {skill.calls} requests", flush=True)


class _Discarded(list):
    def append(self, _item) -> None:
        pass


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] != ["serve"]:
        sys.exit("usage: python tests/known_skill.py serve --dataset D --p P [--port 8091]")
    serve(sys.argv[2:])
