"""Seed ensembles: K copies of one model trained with different seeds, scored together.

The ensemble scores an item by the mean over members of each member's log-softmax over all
items, i.e. the (log of the) geometric mean of the members' next-item distributions. Each
member's raw logits have their own arbitrary offset and scale; the log-softmax puts them on one
scale before averaging. The history mask and the candidate gather happen after the averaging,
exactly as for a single model, so :class:`recmodels.scorer.Scorer` and the evaluation use an
ensemble through the same :class:`SequentialRecommender` contract.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from recmodels.base import SequentialRecommender


class SeedEnsemble(SequentialRecommender):
    """K trained members of one architecture and config (same catalog, same history window)."""

    def __init__(self, members: Sequence[SequentialRecommender]):
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least 2 members, got {len(members)}")
        first = members[0]
        for m in members[1:]:
            if type(m) is not type(first) or m.n_items != first.n_items or m.max_len != first.max_len:
                raise ValueError("ensemble members must share model class, n_items and max_len")
        super().__init__(first.n_items, first.max_len)
        self.members = nn.ModuleList(members)
        self.config = getattr(first, "config", None)  # the members' shared config

    def __len__(self) -> int:
        return len(self.members)

    def score_all(self, seqs: torch.Tensor) -> torch.Tensor:
        """seqs [B, T] -> mean over members of log-softmax over all items [B, N]."""
        total = torch.zeros(seqs.shape[0], self.n_items)
        for member in self.members:
            total += torch.log_softmax(member.score_all(seqs), dim=-1)  # [B, N]
        return total / len(self.members)

    def score_candidates(self, seqs: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """seqs [B, T], candidates [B, C] -> averaged log-probabilities [B, C] (normalised over all
        items, so a candidate's score does not depend on the other candidates)."""
        assert candidates.dim() == 2 and candidates.shape[0] == seqs.shape[0], "candidates must be [B, C]"
        return self.score_all(seqs).gather(1, candidates)

    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        """The members' user states side by side [B, K*H] (scoring does not use it: see score_all)."""
        return torch.cat([m.encode(seqs) for m in self.members], dim=1)

    def output_embeddings(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The members' item output weights side by side [N, K*H], each member's rows L2-normalised
        so that a cosine similarity on them is the mean of the members' cosine similarities
        (what collaborative steering similarity reads); no bias."""
        weights = [nn.functional.normalize(m.output_embeddings()[0], dim=1) for m in self.members]
        return torch.cat(weights, dim=1) / len(self.members) ** 0.5, None
