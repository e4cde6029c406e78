"""The contract every sequential recommender in recloop shares.

Conventions (one for the whole project):
- item ids are 0-based; id ``n_items`` is padding (the LLaRA convention), so
  embedding tables have ``n_items + 1`` rows with ``padding_idx = n_items``;
- histories are *left*-padded to ``max_len`` so the most recent item is always
  at position ``T - 1``.

A model encodes a batch of histories to user states ``[B, H]`` and scores items
from them; scoring, masking and gathering live here, written once.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import ClassVar

import torch
from torch import nn

from recmodels.scan import catalog_product


def pad_histories(histories: Sequence[Sequence[int]], max_len: int, pad_id: int) -> torch.Tensor:
    """Left-pad (and truncate to the newest ``max_len``) -> LongTensor [B, max_len]."""
    out = torch.full((len(histories), max_len), pad_id, dtype=torch.long)
    for i, hist in enumerate(histories):
        tail = list(hist)[-max_len:]
        if tail:
            out[i, max_len - len(tail) :] = torch.as_tensor(tail, dtype=torch.long)
    return out


def init_weights(module: nn.Module) -> None:
    """The initialisation every model shares, applied once with ``model.apply``: Xavier-uniform
    linear/conv weights with zero bias; embeddings N(0, 1/sqrt(d)) with a zero padding row."""
    if isinstance(module, nn.Linear | nn.Conv2d):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=1.0 / math.sqrt(module.embedding_dim))
        if module.padding_idx is not None:
            module.weight.data[module.padding_idx].zero_()


_GATHERED = 1 << 16
"""Candidates whose output weights score_candidates gathers at once (a power of two)."""


class SequentialRecommender(nn.Module, ABC):
    """Base class: subclasses implement :meth:`encode` and :meth:`output_embeddings`."""

    trains_all_positions: ClassVar[bool] = False
    """Whether ``TrainConfig.all_positions`` applies: the model encodes every window position
    (``encode_positions``), so the loss can be taken at each of them."""

    def __init__(self, n_items: int, max_len: int):
        super().__init__()
        self.n_items = n_items
        self.max_len = max_len

    @property
    def pad_id(self) -> int:
        return self.n_items

    def selection_scores(self) -> AbstractContextManager[None]:
        """While training selects its checkpoint on validation: scoring without the options that
        only serving and evaluation apply (TextRec's content-scored cold items). None here."""
        return nullcontext()

    @abstractmethod
    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        """seqs [B, T] left-padded item ids -> user states [B, H]."""

    @abstractmethod
    def output_embeddings(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Item output weights [N, H] (N = n_items, padding excluded) and an optional bias [N]."""

    def per_item_tables(self) -> tuple[nn.Embedding, ...]:
        """The embedding tables with one row per item that :meth:`sampled_item_rows` reads. Under a
        sampled loss a step touches a few hundred of their rows, so training gives them sparse
        gradients and updates only those rows (``recmodels.optimizers``): a dense gradient and a
        dense Adam step over a million rows cost 20x the rest of the step. Empty (the default): the
        model's item vectors are computed (TextRec) and train densely."""
        return ()

    def sampled_item_rows(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Output weights [..., H] and bias [...] | None of the items ``ids`` [...]: what a sampled
        loss reads. A model with :meth:`per_item_tables` gathers through those tables, so their
        gradients stay sparse when training asks for it."""
        weight, bias = self.output_embeddings()
        return weight[ids], None if bias is None else bias[ids]

    def score_all(self, seqs: torch.Tensor) -> torch.Tensor:
        """seqs [B, T] -> logits over all items [B, N]."""
        states = self.encode(seqs)  # [B, H]
        weight, bias = self.output_embeddings()  # [N, H], [N] | None
        logits = catalog_product(weight, states)  # [B, N]; 10^6 rows on a few threads
        return logits + bias if bias is not None else logits

    def score_candidates(self, seqs: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """seqs [B, T], candidates [B, C] item ids -> logits [B, C]."""
        assert candidates.dim() == 2 and candidates.shape[0] == seqs.shape[0], "candidates must be [B, C]"
        states = self.encode(seqs)  # [B, H]
        weight, bias = self.output_embeddings()
        # A steering pool of 10^6 candidates would gather a [1, 10^6, H] block (256 MB at H = 64) at
        # once: gathered a slice at a time it is never more than 16 MB. The slices are a power of two
        # long, so BLAS walks the candidates in the groups it walks them in one block (the same
        # floats: checked at 10^6); fewer candidates than a slice (today's catalogs) are one block.
        logits = torch.cat(
            [torch.einsum("bh,bch->bc", states, rows) for rows in _gathered_rows(weight, candidates)], dim=1
        )  # [B, C]
        return logits + bias[candidates] if bias is not None else logits


def _gathered_rows(weight: torch.Tensor, candidates: torch.Tensor) -> Iterator[torch.Tensor]:
    """``weight[part]`` [B, c, H] for each slice of :data:`_GATHERED` candidates [B, C]. Without
    gradients, one buffer holds every slice in turn: a fresh 16 MB block per slice pays its page
    faults each time (a 10^6-item pool: 50-130 ms against 30-40 ms), for the same bytes."""
    reuse = candidates.shape[1] > _GATHERED and not (torch.is_grad_enabled() and weight.requires_grad)
    buffer = weight.new_empty(candidates.shape[0] * _GATHERED, weight.shape[1]) if reuse else None
    for part in candidates.split(_GATHERED, dim=1):
        if buffer is None:
            yield weight[part]
        else:
            B, c = part.shape  # batch, candidates in this slice
            yield torch.index_select(weight, 0, part.reshape(-1), out=buffer[: B * c]).view(B, c, -1)


def mask_seen(logits: torch.Tensor, seqs: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Set the logits of items already in each history to -inf. logits [B, N], seqs [B, T]."""
    masked = logits.clone()
    rows = torch.arange(seqs.shape[0]).unsqueeze(1).expand_as(seqs)  # [B, T]
    keep = seqs != pad_id
    masked[rows[keep], seqs[keep]] = float("-inf")
    return masked
