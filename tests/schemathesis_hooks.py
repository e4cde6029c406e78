"""schemathesis hooks of tests/test_api_contract.py (loaded through SCHEMATHESIS_HOOKS)."""

from __future__ import annotations

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
