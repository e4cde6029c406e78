"""The trust fit's one-pass counts equal ranking_stats_from_scores on every mix (lab/calibration/ranking)."""

from __future__ import annotations

import random

import pytest
import torch

from lab.calibration import ranking
from lab.calibration.offline import TRUST_GRID, catalog_log_probs, fit_rows
from recmodels.dataset import Row
from recmodels.evaluation import ranking_stats_from_scores, ranking_stats_of_counts


def _rows(n_rows: int, n_items: int, rng: random.Random) -> list[Row]:
    rows = []
    for _ in range(n_rows):
        history = tuple(rng.sample(range(n_items), rng.randint(0, 6)))
        target = rng.choice(history) if history and rng.random() < 0.15 else rng.randrange(n_items)
        rows.append(Row(history, target, len(history) + 1))
    return rows


def _scores(
    rows: list[Row], n_items: int, generator: torch.Generator, *, coarse: bool, masked: bool = True
) -> torch.Tensor:
    """[B, N] log-probability-like scores; ``coarse`` ones tie often (values on a grid of 1/4);
    ``masked`` ones are -inf on the history, as catalog_log_probs'."""
    scores = torch.randn(len(rows), n_items, generator=generator) * 3
    if coarse:
        scores = torch.round(scores * 4) / 4
    for r, row in enumerate(rows):
        if not masked:
            break
        if row.history:
            scores[r, list(row.history)] = float("-inf")
    return scores


@pytest.mark.parametrize("masked", [True, False])
@pytest.mark.parametrize("coarse", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counts_equal_ranking_stats_of_every_mix(
    seed: int, coarse: bool, masked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranking, "CHUNK_CELLS", 3 * 50)  # several chunks of rows
    rng, generator = random.Random(seed), torch.Generator().manual_seed(seed)
    n_items = 50
    rows = _rows(40, n_items, rng)
    a = _scores(rows, n_items, generator, coarse=coarse, masked=masked)
    b = _scores(rows, n_items, generator, coarse=coarse, masked=masked)
    b[:5] = a[:5]  # identical scores: every item on the target's side at every trust
    b[5:8] = a[5:8] * 0.5 + 0.25  # the mix crosses ties exactly at grid trusts
    counts = ranking.outranking_counts(a, b, rows, TRUST_GRID)
    for k, t in enumerate(TRUST_GRID):
        expected = ranking_stats_from_scores((1.0 - t) * a + t * b, rows)
        assert counts[:, k].tolist() == [s.n_outranking for s in expected], f"trust {t}"
        assert ranking_stats_of_counts(counts[:, k].tolist(), rows, n_items) == expected


def test_fit_rows_keeps_small_splits_and_samples_large_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [Row((1, 2), i, 3) for i in range(100)]
    assert fit_rows(rows, 1000) == rows  # within the budget: every row, in order
    import lab.calibration.offline as offline

    monkeypatch.setattr(offline, "FIT_CELLS", 10_000)
    sample = fit_rows(rows, 1000)
    assert len(sample) == 10 and sample == sorted(sample, key=rows.index)
    assert fit_rows(rows, 1000) == sample  # seeded: the same rows each time
    assert offline.seeded_sample(rows, 100) == rows and len(offline.seeded_sample(rows, 7)) == 7


class _Scorer:
    n_items = 30

    def catalog_log_probs(self, histories: list[list[int]]) -> torch.Tensor:
        return torch.stack(
            [torch.arange(self.n_items, dtype=torch.float32) * (len(h) + 1) for h in histories]
        )


def test_catalog_log_probs_in_chunks_equal_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import lab.calibration.offline as offline

    histories = [[1] * k for k in range(7)]
    whole = catalog_log_probs(_Scorer(), histories)  # type: ignore[arg-type]
    monkeypatch.setattr(offline, "SCORE_CELLS", 2 * 30)
    assert torch.equal(catalog_log_probs(_Scorer(), histories), whole)  # type: ignore[arg-type]
