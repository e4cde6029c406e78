"""Training losses, kept outside the modules so every model trains the same way."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from recmodels.base import SequentialRecommender


def full_softmax_ce(
    model: SequentialRecommender, seqs: torch.Tensor, targets: torch.Tensor, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Cross-entropy of the next item over the whole catalog. seqs [B, T], targets [B] -> scalar."""
    logits = model.score_all(seqs)  # [B, N]
    return F.cross_entropy(logits, targets, label_smoothing=label_smoothing)
