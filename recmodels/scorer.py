"""Inference on plain Python ids: what the graph, the service and the evaluation use.

A :class:`Scorer` wraps one trained model; callers never touch tensors.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from recmodels import scan
from recmodels.base import SequentialRecommender, mask_seen, pad_histories


@dataclass(frozen=True)
class ScorerInfo:
    """What identifies a loaded model: shown in results and readiness checks."""

    model_name: str
    dataset: str
    dataset_fingerprint: str
    n_items: int
    artifact_sha256: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Scorer:
    def __init__(self, model: SequentialRecommender, info: ScorerInfo):
        self.model = model.eval()
        self.info = info

    @property
    def n_items(self) -> int:
        return self.model.n_items

    def _seqs(self, histories: Sequence[Sequence[int]]) -> torch.Tensor:
        return pad_histories(histories, self.model.max_len, self.model.pad_id)

    @torch.no_grad()
    def score_batch(
        self, histories: Sequence[Sequence[int]], candidates: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        """Scores of each row's candidates (equal-length candidate lists)."""
        cands = torch.as_tensor([list(c) for c in candidates], dtype=torch.long)  # [B, C]
        return self.model.score_candidates(self._seqs(histories), cands).tolist()

    def score(self, history: Sequence[int], candidates: Sequence[int] | np.ndarray) -> list[float]:
        """Scores of ``candidates`` for one history; an int array of them goes to the model without a
        Python list on the way (:meth:`score_array` keeps the scores an array too)."""
        if isinstance(candidates, np.ndarray):
            return self.score_array(history, candidates).tolist()
        return self.score_batch([history], [candidates])[0]

    @torch.no_grad()
    def score_array(self, history: Sequence[int], candidates: np.ndarray) -> np.ndarray:
        """float64 [C] scores of an int array of candidates (a steering pool of up to 10^6 ids): the
        floats :meth:`score` gives, never a Python float per candidate. A pool of an eighth of the
        catalog or more is read off the catalog's one product, the logits :meth:`top_k` ranks (a
        copy of its rows would cost more than the product; the floats can differ from a gathered
        product's in the last bit)."""
        ids = torch.from_numpy(candidates.astype(np.int64, copy=False))
        seqs = self._seqs([history])
        if len(ids) * 8 >= self.n_items:
            return self.model.score_all(seqs)[0][ids].double().numpy()
        return self.model.score_candidates(seqs, ids.unsqueeze(0))[0].double().numpy()

    def rank(self, history: Sequence[int], candidates: Sequence[int]) -> list[int]:
        """Candidates ordered best first (ties keep the candidate order)."""
        scores = self.score(history, candidates)
        order = sorted(range(len(candidates)), key=lambda i: -scores[i])
        return [candidates[i] for i in order]

    @torch.no_grad()
    def catalog_log_probs(self, histories: Sequence[Sequence[int]]) -> torch.Tensor:
        """[B, N] next-item log-probabilities over the whole catalog, each history's items left out
        (-inf): one scale for every user, whatever the model's raw logit offset."""
        seqs = self._seqs(histories)
        return torch.log_softmax(mask_seen(self.model.score_all(seqs), seqs, self.model.pad_id), dim=1)

    def log_probs(self, history: Sequence[int], items: Sequence[int]) -> list[float]:
        """:meth:`catalog_log_probs` of ``items`` for one history (-inf for history items)."""
        ids = torch.as_tensor(list(items), dtype=torch.long)
        return self.catalog_log_probs([history])[0, ids].tolist()

    @torch.no_grad()
    def top_k(self, history: Sequence[int], k: int, exclude: Collection[int] = ()) -> list[int]:
        """The k best items over the whole catalog, never an item of the history or ``exclude``."""
        seqs = self._seqs([history])
        logits = mask_seen(self.model.score_all(seqs), seqs, self.model.pad_id)[0]  # [N]
        if exclude:
            logits[torch.as_tensor(list(exclude), dtype=torch.long)] = float("-inf")
        values, indices = scan.top_k(logits, min(k, len(logits)))  # 10^6 items: in parts, on a few threads
        if torch.isfinite(values).all():  # NaN and +inf rank first: none in the top k, none at all
            return indices.tolist()
        k = min(k, int(torch.isfinite(logits).sum()))  # rare: count over the catalog (2-3 ms at 10^6)
        return torch.topk(logits, k).indices.tolist()
