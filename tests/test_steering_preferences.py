"""Preference memory: the models' validation and consolidation (merge, conflict, lift, reset, neutral)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from steering.preferences import (
    Preferences,
    PreferenceUpdate,
    Side,
    SoftPreference,
    YearRange,
    consolidate,
    describe,
    steered,
)


def _memory(**sides: Side) -> Preferences:
    return Preferences(**sides)


def test_year_range_rejects_reversed_and_empty_bounds():
    with pytest.raises(ValidationError, match="start 1999 is after end 1990"):
        YearRange(start=1999, end=1990)
    with pytest.raises(ValidationError, match="at least one of start/end"):
        YearRange()
    assert YearRange(start=1990).contains(2005) and not YearRange(end=1989).contains(1990)


def test_compatible_command_is_merged():
    memory = _memory(negative=Side(genres=["Horror"]))
    update = PreferenceUpdate(
        positive=Side(genres=["Comedy"], year_range=YearRange(start=1990, end=1999)),
        negative=Side(genres=["horror", "War"]),  # Horror again, differently cased: no duplicate
    )
    merged = consolidate(memory, update)
    assert merged.positive.genres == ["Comedy"]
    assert merged.positive.year_range == YearRange(start=1990, end=1999)
    assert merged.negative.genres == ["Horror", "War"]
    assert memory.negative.genres == ["Horror"], "the old memory must not be modified"


def test_conflicting_command_replaces_the_old_constraint():
    memory = _memory(
        positive=Side(year_range=YearRange(start=1990, end=1999), soft=[SoftPreference(text="Heat", item=5)]),
        negative=Side(genres=["Horror"], items=[7]),
    )
    update = PreferenceUpdate(
        positive=Side(genres=["Horror"], items=[7], year_range=YearRange(start=1970, end=1979)),
        negative=Side(soft=[SoftPreference(text="heat (1995)", item=5)]),
    )
    after = consolidate(memory, update)
    assert after.positive.genres == ["Horror"] and after.negative.genres == []
    assert after.positive.items == [7] and after.negative.items == []
    assert after.positive.year_range == YearRange(start=1970, end=1979)
    assert after.positive.soft == [] and after.negative.soft == [SoftPreference(text="heat (1995)", item=5)]


def test_negative_year_range_drops_an_overlapping_positive_one_only():
    memory = _memory(positive=Side(year_range=YearRange(start=1990, end=1999)))
    disjoint = consolidate(memory, PreferenceUpdate(negative=Side(year_range=YearRange(end=1960))))
    assert disjoint.positive.year_range == YearRange(start=1990, end=1999)
    overlapping = consolidate(memory, PreferenceUpdate(negative=Side(year_range=YearRange(start=1995))))
    assert overlapping.positive.year_range is None
    assert overlapping.negative.year_range == YearRange(start=1995)


def test_lift_removes_without_adding_the_opposite():
    memory = _memory(negative=Side(genres=["Horror", "War"], items=[3, 4]))
    after = consolidate(memory, PreferenceUpdate(lift=Side(genres=["HORROR"], items=[4])))
    assert after.negative.genres == ["War"] and after.negative.items == [3]
    assert after.positive.is_empty()


def test_neutral_turn_keeps_memory_and_reset_empties_it_first():
    memory = _memory(positive=Side(genres=["Drama"]), negative=Side(items=[1]))
    assert consolidate(memory, PreferenceUpdate()) == memory
    fresh = consolidate(memory, PreferenceUpdate(reset=True))
    assert fresh.is_empty()
    reset_then_add = consolidate(memory, PreferenceUpdate(reset=True, negative=Side(genres=["War"])))
    assert reset_then_add == _memory(negative=Side(genres=["War"]))


def test_describe_names_both_sides():
    memory = _memory(
        positive=Side(genres=["Comedy"], year_range=YearRange(start=1990, end=1999)),
        negative=Side(soft=[SoftPreference(text="Heat", item=272)]),
    )
    assert describe(memory) == "wants: Comedy, released 1990-1999 | avoids: like 'Heat'"
    assert describe(Preferences()) == "no stated preferences"


def test_unknown_fields_are_rejected():
    with pytest.raises(ValidationError, match="colour"):
        Preferences.model_validate({"positive": {"colour": ["red"]}})


def test_a_loop_is_steered_only_by_a_memory_that_holds_something():
    memory = _memory(negative=Side(genres=["Horror"]))
    assert steered(memory) == memory
    assert steered(memory.model_dump(mode="json")) == memory  # as stored with a command
    assert steered(None) is None  # never steered
    assert steered(consolidate(memory, PreferenceUpdate(reset=True))) is None
    assert steered(consolidate(memory, PreferenceUpdate(lift=Side(genres=["Horror"])))) is None
