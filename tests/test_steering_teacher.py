"""The LLM teacher through the real ChatOpenAI client against a local OpenAI-compatible server:
a rewrite is kept only when the LLM reads it back as the simulator's label and the look-up
rebuilds that label from the new words; answers are cached, so a second run makes no calls."""

from __future__ import annotations

from fake_openai import Reply

from app.settings import Settings
from lab.steering.natural_labels import label_command
from lab.steering.teacher import LLMTeacher, teacher_cache_path
from steering.catalog_index import CatalogIndex
from steering.mentions import MentionFinder
from steering.preferences import PreferenceUpdate, Side


def _side(**fields) -> dict:
    empty = {"genres": [], "year_start": None, "year_end": None, "titles": [], "like_titles": [], "soft": []}
    return empty | fields


def _reading(positive=None, negative=None) -> Reply:
    return Reply.json(
        {
            "thoughts": "read it",
            "reset": False,
            "positive": positive or _side(),
            "negative": negative or _side(),
            "lift": _side(),
            "not_understood": [],
        }
    )


def _rewrite(text: str) -> Reply:
    return Reply.json({"thoughts": "other words", "paraphrase": text})


async def test_only_rewrites_read_back_as_labelled_and_found_by_the_look_up_are_kept(
    fake_openai, ml_dataset, tmp_path
):
    index = CatalogIndex(ml_dataset)
    finder = MentionFinder(index, frozenset(), frozenset())
    no_horror = PreferenceUpdate(negative=Side(genres=["Horror"]))
    more_comedy = PreferenceUpdate(positive=Side(genres=["Comedy"]))
    no_westerns = PreferenceUpdate(negative=Side(genres=["Western"]))
    sources = [
        label_command("no horror", no_horror, finder, index),
        label_command("more comedies", more_comedy, finder, index),
        label_command("no westerns", no_westerns, finder, index),
    ]
    assert all(s is not None for s in sources)
    fake_openai.enqueue(
        _rewrite("I've had it with scary movies"),
        _reading(negative=_side(genres=["Horror"])),  # read back as labelled, and "scary" is found
        _rewrite("no comedies for me"),
        _reading(negative=_side(genres=["Comedy"])),  # the rewrite flipped the wish: dropped
        _rewrite("spare me those dusty shootouts"),
        _reading(negative=_side(genres=["Western"])),  # read back right, but no span names Western
    )
    settings = Settings(_env_file=None, llm_base_url=fake_openai.base_url, llm_timeout_s=2, llm_max_retries=0)
    teacher = LLMTeacher(index, settings, finder)
    cache = teacher_cache_path(tmp_path, settings, sources)

    kept, report = await teacher.teach(sources, cache=cache, concurrency=1)

    assert [(c.text, c.expected) for c in kept] == [("I've had it with scary movies", no_horror)]
    assert kept[0].planted and kept[0].planted[0].mention.genres == ("Horror",)
    assert (report.asked, report.rewritten, report.read_back, report.kept, report.cached) == (3, 3, 2, 1, 0)
    assert report.usage["calls"] == 6
    assert len(fake_openai.requests) == 6
    # The read-back call sees only the rewrite, never the command it came from.
    assert "no comedies for me" in fake_openai.requests[3].text
    assert "more comedies" not in fake_openai.requests[3].text

    again, cached = await LLMTeacher(index, settings, finder).teach(sources, cache=cache, concurrency=1)
    assert [c.text for c in again] == ["I've had it with scary movies"]
    assert cached.cached == 3 and len(fake_openai.requests) == 6


async def test_a_rewrite_that_only_repeats_the_command_is_sent_back(fake_openai, ml_dataset):
    index = CatalogIndex(ml_dataset)
    finder = MentionFinder(index, frozenset(), frozenset())
    source = label_command("no horror", PreferenceUpdate(negative=Side(genres=["Horror"])), finder, index)
    fake_openai.enqueue(
        _rewrite("No horror"), _rewrite("horror? not tonight"), _reading(negative=_side(genres=["Horror"]))
    )
    settings = Settings(_env_file=None, llm_base_url=fake_openai.base_url, llm_timeout_s=2, llm_max_retries=1)

    kept, report = await LLMTeacher(index, settings, finder).teach([source], concurrency=1)

    assert "the same as the command" in fake_openai.requests[1].text
    assert [c.text for c in kept] == ["horror? not tonight"] and report.kept == 1
