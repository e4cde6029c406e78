"""bench.faults' false_errors: which 5xx answers misreport work (no server, no database)."""

from __future__ import annotations

import pytest

from bench.fault_counts import Attempt, said_error_for_its_own_work


def _attempts(*statuses: int | None) -> list[Attempt]:
    return [Attempt(status, replayed=status == 200, retry_after=status in (409, 503)) for status in statuses]


@pytest.mark.parametrize(
    ("statuses", "own_work_said_error"),
    [
        # The run that carried the work was cut and answered 503; the work went on without it.
        ((503, 200), True),
        ((503, 409, 200), True),
        # A transport error (the worker killed) hides whether it got there: the retry may carry the work.
        ((None, 503, 200), True),
        # A retry met the work in flight (409), then the database down: "retry" was true then.
        ((None, 409, 409, 503, 503, 409, 200), False),
        ((409, 503, 200), False),
        # No 5xx at all.
        ((None, 409, 200), False),
        ((200,), False),
    ],
)
def test_a_5xx_misreports_work_only_when_it_may_have_come_from_the_attempt_carrying_it(
    statuses, own_work_said_error
):
    assert said_error_for_its_own_work(_attempts(*statuses)) is own_work_said_error
