"""Catalog-sized scans on a few threads (recmodels/scan.py): the same floats as one call."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recmodels import scan
from recmodels.scorer import Scorer, ScorerInfo
from steering import tools

N_ROWS = scan.MIN_ROWS + 3 * scan.PART_ROWS + 37  # parts of uneven length and a tail


@pytest.fixture
def two_scan_threads(one_torch_thread):
    before = scan.scan_threads()
    scan.set_scan_threads(2)
    yield
    scan.set_scan_threads(before)


def test_row_parts_start_at_multiples_of_the_part_size_and_cover_every_row():
    parts = scan.row_parts(N_ROWS, parts=2)
    assert len(parts) == 2 and parts[0].start == 0 and parts[-1].stop == N_ROWS
    assert all(p.start % scan.PART_ROWS == 0 for p in parts)
    assert all(a.stop == b.start for a, b in zip(parts, parts[1:], strict=False))
    assert scan.row_parts(scan.MIN_ROWS - 1, parts=2) == [slice(0, scan.MIN_ROWS - 1)]
    assert scan.row_parts(N_ROWS, parts=1) == [slice(0, N_ROWS)]
    assert len(scan.row_parts(N_ROWS, parts=64)) == -(-N_ROWS // scan.PART_ROWS)  # never below a part
    with pytest.raises(ValueError, match="scan threads"):
        scan.set_scan_threads(0)


def test_a_product_in_parts_gives_the_floats_of_one_call(two_scan_threads):
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(N_ROWS, 64, generator=generator)
    states = torch.randn(3, 64, generator=generator)
    with torch.no_grad():
        assert torch.equal(scan.catalog_product(table, states), states @ table.T)  # [B, N]
        assert torch.equal(scan.catalog_product(table, states[:1]), states[:1] @ table.T)
        assert torch.equal(scan.catalog_product(table, states[0]), table @ states[0])  # [N]


def test_a_product_under_autograd_is_one_call_with_its_gradient(two_scan_threads):
    table = torch.randn(N_ROWS, 8, requires_grad=True)
    states = torch.randn(2, 8)
    logits = scan.catalog_product(table, states)
    assert logits.requires_grad
    logits.sum().backward()
    assert torch.equal(table.grad, states.sum(0).expand(N_ROWS, 8))


def test_exact_sums_in_parts_are_the_sums_of_one_part(two_scan_threads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N_ROWS) * np.exp2(rng.integers(-30, 30, N_ROWS))  # many exponents
    x[:1000] = 0.0
    x[5] = -x[6]
    parts = tools._exact_sums(x)
    scan.set_scan_threads(1)
    assert parts == tools._exact_sums(x) == tools._exact_sums_of_part(x)
    assert tools.zscore_array(x).tolist() == tools.zscore(x.tolist())


class _TableModel(torch.nn.Module):
    """Scores are a fixed state times an item table (what a sequential model's scoring reads)."""

    max_len = 4

    def __init__(self, table: torch.Tensor, state: torch.Tensor):
        super().__init__()
        self.table, self.state = table, state
        self.n_items = self.pad_id = len(table)

    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        return self.state.expand(len(seqs), -1)

    def output_embeddings(self):
        return self.table, None

    def score_all(self, seqs: torch.Tensor) -> torch.Tensor:
        return scan.catalog_product(self.table, self.encode(seqs))

    def score_candidates(self, seqs: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bh,bch->bc", self.encode(seqs), self.table[candidates])


def test_top_k_ranks_as_before_and_leaves_out_what_is_not_finite():
    table = torch.tensor([[1.0], [3.0], [2.0], [float("nan")], [0.5], [float("-inf")]])
    scorer = Scorer(_TableModel(table, torch.tensor([1.0])), ScorerInfo("t", "t", "", len(table)))
    assert scorer.top_k([], 2) == [3, 1]  # NaN ranks first, as it always did (no finite count needed)
    table[3, 0] = 0.0
    assert scorer.top_k([], 2) == [1, 2]
    assert scorer.top_k([1], 2) == [2, 0]
    assert scorer.top_k([], 10) == [1, 2, 0, 4, 3]  # -inf never comes back
    assert scorer.top_k([1, 2, 0, 4], 3, exclude=[3]) == []


def test_a_large_pool_is_scored_off_the_catalogs_product_and_a_small_one_gathered():
    """score_array reads a pool of an eighth of the catalog or more off score_all (the logits
    top_k ranks); a smaller pool gathers its rows. Either way a candidate gets its own score."""
    generator = torch.Generator().manual_seed(3)
    table = torch.randn(400, 16, generator=generator)
    model = _TableModel(table, torch.randn(16, generator=generator))
    scorer = Scorer(model, ScorerInfo("t", "t", "", len(table)))
    everything = (table @ model.state).double().numpy()
    large = np.arange(0, 400, 2)  # 200 of 400
    assert scorer.score_array([1], large).tolist() == everything[large].tolist()
    small = np.array([7, 3, 399])
    assert np.allclose(scorer.score_array([1], small), everything[small], rtol=1e-6)


def test_top_k_in_parts_is_torch_topk(two_scan_threads):
    generator = torch.Generator().manual_seed(4)
    values = torch.randn(N_ROWS, generator=generator)
    values[torch.randperm(N_ROWS, generator=generator)[:50]] = float("-inf")
    values[N_ROWS - 3] = float("nan")  # ranks first, as in torch.topk
    for k in (1, 20, 1000):
        got_values, got_indices = scan.top_k(values, k)
        expected = torch.topk(values, k)
        assert got_indices.tolist() == expected.indices.tolist(), k
        assert torch.equal(got_values.nan_to_num(), expected.values.nan_to_num()), k
    assert scan.top_k(values[:100], 5)[1].tolist() == torch.topk(values[:100], 5).indices.tolist()  # one part


def test_a_gathered_pool_in_slices_on_two_threads_gives_the_floats_of_one_call(two_scan_threads):
    """score_candidates gathers a long pool a power-of-two slice at a time, on the scan threads, into
    scratch blocks kept between calls: the floats of one einsum over every row, call after call
    (a kept block never leaks a row of the last call), for one history and for a batch."""
    from recmodels.base import _gathered_scores

    generator = torch.Generator().manual_seed(5)
    weight = torch.randn(90_000, 16, generator=generator)
    for n_candidates, batch in ((70_000, 1), (40_000, 1), (20_000, 1), (300, 3), (20_000, 2)):
        states = torch.randn(batch, 16, generator=generator)
        candidates = torch.randint(0, len(weight), (batch, n_candidates), generator=generator)
        one_call = torch.einsum("bh,bch->bc", states, weight[candidates])
        assert torch.equal(_gathered_scores(weight, states, candidates), one_call), (n_candidates, batch)
    assert len(scan._scratch) <= scan.KEPT_SCRATCH_BLOCKS


def test_a_gathered_pool_under_autograd_keeps_its_gradients():
    """Training gathers without scratch blocks: einsum keeps the rows it read for the backward pass."""
    from recmodels.base import _gathered_scores

    generator = torch.Generator().manual_seed(6)
    weight = torch.randn(500, 8, generator=generator, requires_grad=True)
    states = torch.randn(2, 8, generator=generator, requires_grad=True)
    candidates = torch.randint(0, 500, (2, 300), generator=generator)
    _gathered_scores(weight, states, candidates).sum().backward()
    assert torch.allclose(states.grad, weight.detach()[candidates].sum(1))
    assert weight.grad is not None and torch.count_nonzero(weight.grad.sum(1)) > 0
