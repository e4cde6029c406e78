"""Training losses, kept outside the modules so every model trains the same way."""

from __future__ import annotations

import math

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


def gbce(
    model: SequentialRecommender,
    seqs: torch.Tensor,
    targets: torch.Tensor,
    n_negatives: int,
    t: float,
    generator: torch.Generator,
    shared: bool = False,
) -> torch.Tensor:
    """gBCE (gSASRec: Petrov & Macdonald, RecSys 2023): binary cross-entropy of the positive against
    ``n_negatives`` items drawn uniformly from the catalog, the positive's probability raised to
    ``beta`` to undo the overconfidence that sampling teaches. seqs [B, T], targets [B] (newest
    position) or [B, T] (every position; padding targets carry no loss) -> scalar.

    alpha = k / (N - 1) is the sampling rate and beta = alpha * (t * (1 - 1/alpha) + 1/alpha): t = 0
    gives beta = 1, plain BCE; t = 1 gives beta = alpha, the fully calibrated limit (the paper uses
    t = 0.75). gSASRec feeds its BCE the logit of sigma(s)^beta; the same loss is written here as
    beta * softplus(-s), finite for any s. As in gSASRec a drawn negative may be the positive itself
    (rare with k << N), and the loss is the mean over each position's 1 + k logits. Cost O(P k H),
    not O(P N H): what lets training scale with the catalog.

    Every logit is shifted by the constant :func:`gbce_offset` before the loss. BCE, unlike softmax,
    is not shift-invariant: a model that cannot tell items apart yet wants all its logits near
    log(beta / k), where the k negatives' pull balances the positive's. Without the shift the model
    reaches that level through its tied item embeddings (a direction shared by every item, as large
    as the items' own parts at this init scale), which drowns the items' identity in the encoder's
    input: SASRec on MovieLens stayed at popularity (validation HR@1 0.23 against softmax's 0.49).
    The shift is the same for every item, so rankings and serving are unchanged.

    ``shared``: one draw of k negatives for the whole batch, shared by its positions, instead of
    gSASRec's k per position. Each position's loss is the same in expectation (its k negatives are
    still uniform); the step reads k item rows instead of P x k. At a million items the P x k rows'
    gathers and their sparse update were most of a step (68k random rows of a 256 MB table, 110-170
    ms against 42 ms for a whole MovieLens step); shared, the negatives cost one [P, H] x [H, k]
    product. What it costs in accuracy is measured by ``python -m bench.sampled_parity``.
    """
    N = model.n_items
    if targets.dim() == 2:  # every position
        encode_positions = getattr(model, "encode_positions", None)
        if encode_positions is None:
            raise TypeError(f"{type(model).__name__} has no encode_positions; all-position training needs it")
        keep = targets != model.pad_id  # [B, T]
        states, positives = encode_positions(seqs)[keep], targets[keep]  # [P, H], [P]
    else:
        states, positives = model.encode(seqs), targets  # [B, H], [B]
    P, _H = states.shape  # positions with a target, hidden
    k = max(1, min(n_negatives, N - 1))
    pos_weight, pos_bias = model.sampled_item_rows(positives)  # [P, H], [P] | None
    pos = (states * pos_weight).sum(-1)  # [P]
    if shared:
        negatives = torch.randint(0, N, (k,), generator=generator).to(states.device)  # [k]
        neg_weight, neg_bias = model.sampled_item_rows(negatives)  # [k, H], [k] | None
        neg = states @ neg_weight.T  # [P, k]
    else:
        negatives = torch.randint(0, N, (P, k), generator=generator).to(states.device)  # [P, k]
        neg_weight, neg_bias = model.sampled_item_rows(negatives)  # [P, k, H], [P, k] | None
        neg = torch.einsum("ph,pkh->pk", states, neg_weight)  # [P, k]
    if pos_bias is not None and neg_bias is not None:
        pos, neg = pos + pos_bias, neg + neg_bias
    return gbce_from_logits(pos, neg, gbce_beta(k, N, t))


def gbce_from_logits(pos: torch.Tensor, neg: torch.Tensor, beta: float) -> torch.Tensor:
    """gBCE of the positives' logits pos [P] against their negatives' neg [P, k] -> scalar: the
    mean over the 1 + k logits of each position, both shifted by :func:`gbce_offset` first."""
    k = neg.shape[1]
    shift = gbce_offset(k, beta)
    per_position = beta * F.softplus(-(pos + shift)) + F.softplus(neg + shift).sum(1)  # [P]
    return per_position.mean() / (k + 1)


def gbce_offset(n_negatives: int, beta: float) -> float:
    """log(beta / k): the one logit, shared by the positive and its k negatives, at which gBCE's
    gradient vanishes (beta * sigmoid(-c) = k * sigmoid(c))."""
    return math.log(beta / n_negatives)


def gbce_beta(n_negatives: int, n_items: int, t: float) -> float:
    """gSASRec's beta for k negatives of N items and calibration t in [0, 1]."""
    alpha = n_negatives / max(1, n_items - 1)
    return alpha * (t * (1.0 - 1.0 / alpha) + 1.0 / alpha)
