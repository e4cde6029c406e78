"""The client's answer types mirror /openapi.json: the client ships without the server (a wheel puts
the server's packages under recloop/_server/, and import-linter keeps `recloop` from importing them),
so it cannot derive its TypedDicts from app/api/schemas.py; this test keeps the mirror honest."""

from __future__ import annotations

import typing

import pytest

from app.main import create_app
from app.settings import Settings
from recloop import client

MIRRORS = {
    client.Item: "ItemPublic",
    client.Session: "SessionPublic",
    client.SessionState: "SessionStatePublic",
    client.Round: "RoundPublic",
    client.Recommendation: "RecommendationPublic",
    client.Loop: "LoopPublic",
    client.CommandResult: "CommandResultPublic",
}


@pytest.fixture(scope="module")
def components() -> dict[str, typing.Any]:
    return create_app(Settings(_env_file=None)).openapi()["components"]["schemas"]


@pytest.mark.parametrize("answer", list(MIRRORS), ids=lambda t: t.__name__)
def test_every_key_of_a_client_answer_type_is_in_the_servers_schema(answer, components):
    properties = components[MIRRORS[answer]]["properties"]
    assert set(typing.get_type_hints(answer)) - set(properties) == set()
