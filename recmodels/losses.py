"""Training losses, kept outside the modules so every model trains the same way."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from recmodels.base import SequentialRecommender


def full_softmax_ce(
    model: SequentialRecommender,
    seqs: torch.Tensor,
    targets: torch.Tensor,
    label_smoothing: float = 0.0,
    mask_history: bool = False,
) -> torch.Tensor:
    """Cross-entropy of the next item over the whole catalog. seqs [B, T], targets [B] -> scalar.

    ``mask_history`` leaves the history's items out of the softmax (never the target itself): the
    evaluation never offers a history item, so the model need not spend probability mass on them.
    Label smoothing spreads over the items left in the softmax.
    """
    logits = model.score_all(seqs)  # [B, N]
    if mask_history:
        logits = _mask_history_except_target(logits, seqs, targets)
    return _smoothed_ce(logits, targets, label_smoothing)


def _smoothed_ce(logits: torch.Tensor, targets: torch.Tensor, label_smoothing: float) -> torch.Tensor:
    """Mean cross-entropy of logits [P, N] (-inf = left out) against targets [P], label smoothing
    spread over the items left in."""
    log_probs = F.log_softmax(logits, dim=1)  # [P, N]
    nll = -log_probs.gather(1, targets.unsqueeze(1)).squeeze(1)  # [P]
    if label_smoothing == 0.0:
        return nll.mean()
    allowed = torch.isfinite(logits)  # [P, N]
    uniform = -(log_probs.masked_fill(~allowed, 0.0).sum(1) / allowed.sum(1))  # [P]
    return ((1.0 - label_smoothing) * nll + label_smoothing * uniform).mean()


def _mask_history_except_target(
    logits: torch.Tensor, seqs: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    B, N = logits.shape  # batch, items; the padding id is N
    seen = torch.zeros(B, N + 1, dtype=torch.bool, device=logits.device)  # column N catches padding
    seen.scatter_(1, seqs, True)
    seen = seen[:, :N]
    seen[torch.arange(B), targets] = False
    return logits.masked_fill(seen, float("-inf"))


def all_positions_ce(
    model: SequentialRecommender,
    seqs: torch.Tensor,
    targets: torch.Tensor,
    pad_id: int,
    label_smoothing: float = 0.0,
    mask_history: bool = False,
) -> torch.Tensor:
    """Next-item cross-entropy over the whole catalog at every position. seqs, targets [B, T] -> scalar.

    ``targets[b, t]`` is the item following ``seqs[b, t]``; positions whose target is ``pad_id``
    (left padding) carry no loss. Needs a model with ``encode_positions`` (SASRec): one forward
    pass trains T next-item predictions instead of one. ``mask_history`` leaves the items of each
    position's own prefix ``seqs[b, :t + 1]`` out of its softmax (never its target); label
    smoothing as in :func:`full_softmax_ce`. With targets only at the last position this equals
    :func:`full_softmax_ce` of those targets.
    """
    encode_positions = getattr(model, "encode_positions", None)
    if encode_positions is None:
        raise TypeError(f"{type(model).__name__} has no encode_positions; all-position training needs it")
    assert seqs.shape == targets.shape, "seqs and targets must both be [B, T]"
    keep = targets != pad_id  # [B, T]
    states = encode_positions(seqs)[keep]  # [P, H], P = positions with a target
    weight, bias = model.output_embeddings()  # [N, H], [N] | None
    logits = states @ weight.T  # [P, N]
    if bias is not None:
        logits = logits + bias
    kept_targets = targets[keep]  # [P]
    if mask_history:
        B, T = seqs.shape
        N = logits.shape[1]  # the padding id is N
        seen = torch.zeros(B, T, N + 1, dtype=torch.bool, device=logits.device)  # column N: padding
        seen.scatter_(2, seqs.unsqueeze(-1), True)  # [B, T, N + 1]: the item at each position
        for t in range(1, T):  # prefix union: position t has seen every item up to t
            seen[:, t] |= seen[:, t - 1]
        seen = seen[keep][:, :N]  # [P, N]
        seen[torch.arange(len(kept_targets)), kept_targets] = False
        logits = logits.masked_fill(seen, float("-inf"))
    return _smoothed_ce(logits, kept_targets, label_smoothing)
