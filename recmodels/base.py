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
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import ClassVar

import torch
from torch import nn

from recmodels.scan import catalog_product, map_slices, scan_threads, scratch_rows


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
        logits = _gathered_scores(weight, states, candidates)  # [B, C]
        return logits + bias[candidates] if bias is not None else logits


def _gathered_scores(weight: torch.Tensor, states: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """``einsum("bh,bch->bc", states, weight[candidates])`` a slice of candidates at a time.

    A steering pool of 10^6 candidates would gather a [1, 10^6, H] block (256 MB at H = 64) at once:
    a slice at a time it is never more than 16 MB. Slices are a power of two long, so BLAS walks the
    candidates in the groups it walks them in one call (the same floats: tests check it). Without
    gradients the slices run on the scan threads, each gathered into a scratch block kept between
    calls (:func:`recmodels.scan.scratch_rows`), where a fresh block of up to 16 MB paid its page
    faults each time: together ~2 ms off a 10^6-item catalog's median command (bench/README.md)."""
    if torch.is_grad_enabled() and (weight.requires_grad or states.requires_grad):
        parts = candidates.split(_GATHERED, dim=1)
        return torch.cat([torch.einsum("bh,bch->bc", states, weight[part]) for part in parts], dim=1)

    @torch.no_grad()  # grad mode is per thread: a scan thread's would be on
    def score(columns: slice) -> torch.Tensor:
        part = candidates[:, columns]
        B, c = part.shape  # batch, candidates in this slice
        with scratch_rows(weight, B * c) as block:
            rows = torch.index_select(weight, 0, part.reshape(-1), out=block).view(B, c, -1)
            return torch.einsum("bh,bch->bc", states, rows)

    n = candidates.shape[1]
    return torch.cat(map_slices(n, _slice_length(n), score), dim=1)


def _slice_length(n_candidates: int) -> int:
    """A power of two at most :data:`_GATHERED`: one slice per scan thread where the pool is long."""
    threads = scan_threads()
    if threads == 1 or n_candidates < _SPLIT_FROM:
        return _GATHERED
    per_thread = -(-n_candidates // threads)
    return min(_GATHERED, max(_SPLIT_FROM // 2, 1 << (per_thread - 1).bit_length()))


_SPLIT_FROM = 1 << 14
"""Fewer candidates than this are gathered in this thread: a hand-off costs more than it saves."""


def mask_seen(logits: torch.Tensor, seqs: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Set the logits of items already in each history to -inf. logits [B, N], seqs [B, T]."""
    masked = logits.clone()
    rows = torch.arange(seqs.shape[0]).unsqueeze(1).expand_as(seqs)  # [B, T]
    keep = seqs != pad_id
    masked[rows[keep], seqs[keep]] = float("-inf")
    return masked
