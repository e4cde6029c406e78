"""schemathesis hooks of tests/test_api_contract.py (loaded through SCHEMATHESIS_HOOKS)."""

from __future__ import annotations

import hashlib
import os
import re
import uuid

import schemathesis

VALID_KEY = re.compile(r"[\x21-\x7e]{1,255}")


@schemathesis.hook
def before_call(context, case, kwargs):
    # Clients use a new Idempotency-Key per distinct request. Generated keys repeat (hypothesis likes
    # "0") across different bodies, which the API rightly refuses with 422, so every valid key is
    # made unique here; invalid ones (negative tests) are left alone. Replays and reuse are tested
    # in tests/test_api_idempotency.py.
    for headers in (case.headers, kwargs.get("headers")):
        key = (headers or {}).get("Idempotency-Key")
        if isinstance(key, str) and VALID_KEY.fullmatch(key):
            headers["Idempotency-Key"] = str(uuid.uuid4())


ASSISTANTS = ("recloop", "recloop-human")
KNOWN_THREADS = [t for t in os.environ.get("RECLOOP_SWEEP_THREADS", "").split(",") if t]
"""Threads made for the protocol sweep: a random id only ever meets 404, these meet the routes' work."""


def _pick(value: object, choices: int) -> int:
    return int(hashlib.sha256(repr(value).encode()).hexdigest(), 16) % choices


@schemathesis.hook
def map_path_parameters(context, path_parameters):
    # Two of three generated thread ids become a real thread (deterministically, so the fixed seed
    # replays the same run), and a run id on it one of its first loops; assistant ids likewise.
    if not KNOWN_THREADS or not isinstance(path_parameters, dict):
        return path_parameters
    mapped = dict(path_parameters)
    assistant_id = path_parameters.get("assistant_id")
    if isinstance(assistant_id, str) and (pick := _pick(assistant_id, 3)):
        mapped["assistant_id"] = ASSISTANTS[pick - 1]
    thread_id = path_parameters.get("thread_id")
    if not isinstance(thread_id, str):
        return mapped
    pick = _pick(thread_id, 3 * len(KNOWN_THREADS))
    if pick % 3 == 0:
        return mapped
    known = mapped["thread_id"] = KNOWN_THREADS[pick // 3]
    if isinstance(path_parameters.get("run_id"), str) and pick % 3 == 1:
        mapped["run_id"] = str(
            uuid.UUID(int=uuid.UUID(known).int ^ (1 + _pick(path_parameters["run_id"], 2)))
        )
    return mapped


@schemathesis.hook
def map_body(context, body):
    # A run's assistant is one of the served two in two of three bodies (else a random name: 404).
    named = KNOWN_THREADS and isinstance(body, dict) and isinstance(body.get("assistant_id"), str)
    if named and (pick := _pick(body["assistant_id"], 3)):
        return {**body, "assistant_id": ASSISTANTS[pick - 1]}
    return body
