"""Where each validation target lands under every mix ``(1 - t) * a + t * b`` of a trust grid, in one pass.

The trust fit (:func:`lab.calibration.offline.fit_trust`) ranks the catalog under 21 mixes of two
scores for each of up to 17 history-evidence choices: with
:func:`recmodels.evaluation.ranking_stats_from_scores` that is 357 passes over a [rows, catalog]
tensor each (42 s of a 54 s fit at 10^4 items, 4 GB at 10^5, hours at 10^6). One pass is enough:
an item's side of the target can change at most once as t goes from 0 to 1 (the difference of
two mixes is linear in t), so the crossing point says at which grid trusts it outranks the target.

The counts are those of ``ranking_stats_from_scores`` on each mix, not an approximation: an item
within rounding of a tie with the target at some grid trust (float32 mixes and margins: ~1e-7 of
the magnitudes; the band is 1e-5) is recounted with the same float32 expression and the same tie
rule (lower id first), and so is every item of a row whose target score is not finite (a target in its own
history). tests/test_calibration_ranking.py compares both on ties, history targets and -inf.
Rows are taken a chunk at a time, so no temporary exceeds ``CHUNK_CELLS`` rows x items.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from recmodels.dataset import Row
from recmodels.evaluation import rows_per_block

CHUNK_CELLS = 2**22
"""Rows x items per step: each temporary is then 16 MB, whatever the catalog."""
TIE_BAND = 1e-5
"""Relative distance to a tie below which an item is recounted exactly (float32 rounding of a
mix is ~3e-7 of the magnitudes involved: 30 times inside the band)."""


def outranking_counts(
    a: torch.Tensor, b: torch.Tensor, rows: Sequence[Row], trusts: Sequence[float]
) -> torch.Tensor:
    """[B, K] long: per row and trust t, how many items outrank the row's target under
    ``(1 - t) * a + t * b`` (a, b [B, N] float32), counted as ``ranking_stats_from_scores`` counts
    (``n_outranking``): history items and the target never, ties to the lower item id."""
    B, N = a.shape  # rows, catalog
    counts = torch.zeros(B, len(trusts), dtype=torch.long)
    step = rows_per_block(N, most=B, cells=CHUNK_CELLS)
    for start in range(0, B, step):
        stop = min(B, start + step)
        counts[start:stop] = _chunk_counts(a[start:stop], b[start:stop], rows[start:stop], trusts)
    return counts


def _chunk_counts(
    a: torch.Tensor, b: torch.Tensor, rows: Sequence[Row], trusts: Sequence[float]
) -> torch.Tensor:
    C, N = a.shape  # rows of this chunk, catalog
    K = len(trusts)
    targets = torch.as_tensor([r.next for r in rows], dtype=torch.long)  # [C]
    a_t, b_t = a.gather(1, targets.unsqueeze(1)), b.gather(1, targets.unsqueeze(1))  # [C, 1]
    # The margins over the target at t = 0 and t = 1 (linear in between), in float32: their
    # rounding (~1e-7 of the magnitudes) is a hundredth of the band.
    d0, d1 = a - a_t, b - b_t  # [C, N]
    tol = (a.abs() + b.abs()).add_(a_t.abs() + b_t.abs()).mul_(TIE_BAND)
    # Never counted: the row's history (-inf in ranking_stats_from_scores' mask) and the target.
    skip = torch.zeros(C, N, dtype=torch.bool)
    for r, row in enumerate(rows):
        skip[r, torch.as_tensor([*row.history, row.next], dtype=torch.long)] = True
    d0.masked_fill_(skip, -1.0)
    d1.masked_fill_(skip, -1.0)
    tol.masked_fill_(skip, 0.0)
    band = ~(torch.isfinite(d0) & torch.isfinite(d1) & torch.isfinite(tol))  # odd scores: recount
    band |= ~(torch.isfinite(a_t) & torch.isfinite(b_t))  # a target in its history: the whole row
    band &= ~skip
    always = (d0 > tol) & (d1 > tol)
    crossing = ~always & ((d0 >= -tol) | (d1 >= -tol)) & ~band
    always &= ~band
    counts = always.sum(dim=1, keepdim=True).expand(C, K).clone()  # [C, K]

    r, j = crossing.nonzero(as_tuple=True)  # items whose side may change with t
    start, width = d0[r, j].double(), tol[r, j].double()
    slope = d1[r, j].double() - start
    grid = torch.as_tensor(list(trusts), dtype=torch.float64)  # [K] ascending
    flat = slope.abs() <= width  # both margins within the band: a tie is near everywhere
    crossing_t = -start / torch.where(flat, torch.ones_like(slope), slope)  # where the margin is 0
    pos = torch.searchsorted(grid, crossing_t)  # grid trusts below the crossing
    nearest = torch.minimum(
        (crossing_t - grid[(pos - 1).clamp(min=0)]).abs(), (grid[pos.clamp(max=K - 1)] - crossing_t).abs()
    )
    near_tie = flat | (nearest * slope.abs() <= width)  # |margin| at the nearest grid trust
    band[r[near_tie], j[near_tie]] = True
    keep = ~near_tie
    r, pos, rising = r[keep], pos[keep], slope[keep] > 0
    # Rising margin: above from the first grid trust past the crossing on; falling: until it.
    first = torch.where(rising, pos, torch.zeros_like(pos))
    last = torch.where(rising, torch.full_like(pos, K), pos)
    edges = torch.bincount(r * (K + 1) + first, minlength=C * (K + 1))
    edges -= torch.bincount(r * (K + 1) + last, minlength=C * (K + 1))
    counts += edges.view(C, K + 1).cumsum(dim=1)[:, :K]

    r, j = band.nonzero(as_tuple=True)  # recounted as ranking_stats_from_scores counts
    if len(r):
        a_j, b_j, a_r, b_r = a[r, j], b[r, j], a_t[r, 0], b_t[r, 0]
        for k, t in enumerate(trusts):
            mixed = (1.0 - t) * a_j + t * b_j  # the same float32 expression as fit_trust's mix
            target = (1.0 - t) * a_r + t * b_r
            above = (mixed > target) | ((mixed == target) & (j < targets[r]))
            above &= mixed != float("-inf")
            counts[:, k] += torch.bincount(r[above], minlength=C)
    return counts
