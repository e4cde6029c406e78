"""The LLM command parser through the real ChatOpenAI client against a local OpenAI-compatible server."""

from __future__ import annotations

import pytest
from fake_openai import Reply

from app.settings import Settings
from steering.choice import build_parser, parser_kind
from steering.llm_parser import LLMParser
from steering.preferences import Preferences, PreferenceUpdate, Side, SoftPreference, YearRange
from steering.rule_parser import OfflineParser

TOY_STORY, HEAT = 0, 272


def _side(**fields) -> dict:
    empty = {"genres": [], "year_start": None, "year_end": None, "titles": [], "like_titles": [], "soft": []}
    return empty | fields


def _answer(positive=None, negative=None, lift=None, reset=False, not_understood=()) -> Reply:
    return Reply.json(
        {
            "thoughts": "map the command",
            "reset": reset,
            "positive": positive or _side(),
            "negative": negative or _side(),
            "lift": lift or _side(),
            "not_understood": list(not_understood),
        }
    )


def _settings(server, method: str = "json_schema", retries: int = 1) -> Settings:
    return Settings(
        _env_file=None,
        llm_base_url=server.base_url,
        llm_timeout_s=0.5,
        llm_max_retries=retries,
        llm_structured_method=method,
    )


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
async def test_structured_answer_becomes_an_update_with_catalog_ids(fake_openai, ml_dataset, method):
    parser = LLMParser(ml_dataset, _settings(fake_openai, method).llm_config())
    fake_openai.enqueue(
        _answer(
            positive=_side(year_start=1990, year_end=1999, like_titles=["toy story"], soft=["lighter"]),
            negative=_side(genres=["animation"], titles=["Heat"]),
        )
    )
    result = await parser.parse(
        "lighter, 90s, like Toy Story but not animated, and not Heat",
        memory=Preferences(negative=Side(genres=["Horror"])),
        recommendations=[HEAT, TOY_STORY],
    )
    assert result.parser == "llm" and not result.fallback and result.understood
    assert result.update == PreferenceUpdate(
        positive=Side(
            year_range=YearRange(start=1990, end=1999),
            soft=[SoftPreference(text="lighter"), SoftPreference(text="Toy Story", item=TOY_STORY)],
        ),
        negative=Side(genres=["Animation"], items=[HEAT]),
    )
    shown = fake_openai.requests[0].text
    assert "avoids: Horror" in shown and "Heat; Toy Story" in shown and "Sci-Fi" in shown


async def test_unknown_title_is_fed_back_and_the_model_corrects_itself(fake_openai, ml_dataset):
    parser = LLMParser(ml_dataset, _settings(fake_openai).llm_config())
    fake_openai.enqueue(
        _answer(positive=_side(like_titles=["Toy Story 7"])),
        _answer(not_understood=["Toy Story 7"]),
    )
    result = await parser.parse("more like Toy Story 7", memory=Preferences())
    assert len(fake_openai.requests) == 2
    assert "'Toy Story 7' is not a catalog title" in fake_openai.requests[1].text
    assert result.unparsed == ["'Toy Story 7': not understood"] and not result.understood
    assert result.update.is_neutral() and not result.fallback


async def test_falls_back_to_the_offline_parser_after_the_last_retry(fake_openai, ml_dataset):
    parser = LLMParser(ml_dataset, _settings(fake_openai, retries=1).llm_config())
    fake_openai.enqueue(Reply.error(500), _answer(positive=_side(genres=["Polka"])))
    result = await parser.parse("no more horror", memory=Preferences())
    assert len(fake_openai.requests) == 2
    assert result.fallback and result.parser == "llm"
    assert result.update == PreferenceUpdate(negative=Side(genres=["Horror"]))


def test_without_an_llm_call_the_llm_parser_reads_with_its_rules(fake_openai, ml_dataset):
    parser = LLMParser(ml_dataset, _settings(fake_openai).llm_config())
    assert parser.without_calls() is parser.fallback and isinstance(parser.fallback, OfflineParser)
    assert parser.fallback.without_calls() is parser.fallback
    assert not fake_openai.requests


def test_auto_picks_the_llm_parser_when_an_endpoint_is_set(ml_dataset, fake_openai, tmp_path):
    cases = ((Settings(_env_file=None), OfflineParser), (_settings(fake_openai), LLMParser))
    for settings, parser_class in cases:
        config = settings.model_copy(update={"data_dir": tmp_path}).parser_config()  # no learned artifact
        parser = build_parser(parser_kind(config, "movielens"), ml_dataset, config, "movielens")
        assert isinstance(parser, parser_class)
