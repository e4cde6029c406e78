"""Caser: convolutional sequence embedding (Tang & Wang, WSDM 2018, arXiv 1809.07426).

The last ``L`` item embeddings form an ``L x d`` "image"; horizontal filters of
heights 1..L (max-pooled over time) capture union-level and skip patterns,
vertical filters weight positions; a dense layer maps both to the user state.

Deviations from the paper:
- No user embedding: LLaRA's evaluation users are unseen at training time
  (users are split by time), so the state comes from the sequence alone and
  the output layer is ``[N, d]`` plus a per-item bias instead of ``[N, 2d]``.
- Full-softmax cross-entropy over all items instead of sampled negatives with
  binary cross-entropy; one target (the next item) per window.
- Optionally (``tie_weights``) the output layer reuses the input item embeddings.
- Shorter inputs are left-padded to ``L`` (padding embeddings are zero), so a
  history is always read at the same positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from recmodels.base import SequentialRecommender, init_weights


@dataclass
class CaserConfig:
    hidden: int = 64  # AFL/LLaRA setup (paper's d = 50)
    max_len: int = 10  # L: LLaRA history window (paper: L = 5)
    n_vertical: int = 4  # paper default n_v
    n_horizontal: int = 16  # paper default n_h per height
    dropout: float = 0.5  # paper default
    # Score with the input item embeddings (+ bias) instead of a separate output table: fewer
    # parameters; helps on the sparse LastFM data, where the separate table overfits.
    tie_weights: bool = False


class Caser(SequentialRecommender):
    def __init__(self, n_items: int, config: CaserConfig):
        super().__init__(n_items, config.max_len)
        self.config = config
        L, d = config.max_len, config.hidden
        self.item_emb = nn.Embedding(n_items + 1, d, padding_idx=n_items)
        self.vertical = nn.Conv2d(1, config.n_vertical, kernel_size=(L, 1))
        self.horizontal = nn.ModuleList(
            nn.Conv2d(1, config.n_horizontal, kernel_size=(h, d)) for h in range(1, L + 1)
        )
        self.drop = nn.Dropout(config.dropout)
        self.fc = nn.Linear(config.n_vertical * d + config.n_horizontal * L, d)
        self.out_weight = None if config.tie_weights else nn.Embedding(n_items, d)
        self.out_bias = nn.Embedding(n_items, 1)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Embedding) and module.embedding_dim == 1:
            nn.init.zeros_(module.weight)  # the output bias starts neutral
        else:
            init_weights(module)

    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        B, T = seqs.shape  # batch, time (left-padded, T <= L)
        L = self.max_len
        assert T <= L, f"sequence length {T} exceeds max_len {L}"
        seqs = F.pad(seqs, (L - T, 0), value=self.pad_id)  # [B, L]
        image = self.item_emb(seqs).unsqueeze(1)  # [B, 1, L, d]
        vertical = self.vertical(image).flatten(1)  # [B, n_v * d]
        horizontal = [
            F.relu(conv(image).squeeze(3)).amax(dim=2)  # [B, n_h]: max over the L-h+1 windows
            for conv in self.horizontal
        ]
        features = torch.cat([vertical, *horizontal], dim=1)  # [B, n_v * d + n_h * L]
        return F.relu(self.fc(self.drop(features)))  # [B, d]

    def output_embeddings(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        weight = self.item_emb.weight[: self.n_items] if self.out_weight is None else self.out_weight.weight
        return weight, self.out_bias.weight.squeeze(1)

    def per_item_tables(self) -> tuple[nn.Embedding, ...]:
        tables = (self.item_emb, self.out_bias)
        return tables if self.out_weight is None else (*tables, self.out_weight)

    def sampled_item_rows(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        weight = self.item_emb(ids) if self.out_weight is None else self.out_weight(ids)
        return weight, self.out_bias(ids).squeeze(-1)
