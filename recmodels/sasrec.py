"""SASRec: self-attentive sequential recommendation (Kang & McAuley, ICDM 2018, arXiv 1808.09781).

A stack of causal self-attention blocks over the item sequence; the state at the
newest position scores every item against the (shared) item embedding table.

Deviations from the paper:
- Trained with full-softmax cross-entropy over all items on the newest position
  (the paper uses one sampled negative per position with binary cross-entropy).
  The LLaRA training windows already contain every prefix of a user's sequence,
  so "every position" training is covered by the data; ``all_positions=True``
  adds the loss at every position of each window anyway (each position's own
  prefix left out of its softmax when ``mask_history``).
- Pre-layer-norm blocks (as in pmixer/SASRec.pytorch) and GELU in the
  feed-forward layer.
- Positions are counted from the newest item backwards, so a history gets the
  same positional encoding however much left padding precedes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from recmodels.base import SequentialRecommender, init_weights


@dataclass
class SASRecConfig:
    hidden: int = 64  # AFL/LLaRA setup
    max_len: int = 10  # LLaRA history window
    n_blocks: int = 2  # paper default
    n_heads: int = 1  # paper: one head is enough at this size
    dropout: float = 0.2  # paper uses 0.2 for the dense MovieLens-1M, 0.5 for sparse sets


class _Block(nn.Module):
    """Pre-LN causal self-attention + position-wise feed-forward."""

    def __init__(self, hidden: int, n_heads: int, dropout: float):
        super().__init__()
        assert hidden % n_heads == 0, "hidden must be divisible by n_heads"
        self.n_heads = n_heads
        self.dropout = dropout
        self.attn_norm = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.ffn_norm = nn.LayerNorm(hidden)
        self.ffn = nn.Sequential(
            nn.Linear(hidden, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, hidden)
        )
        self.resid_drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor) -> torch.Tensor:
        B, T, H = x.shape  # batch, time, hidden
        q, k, v = self.qkv(self.attn_norm(x)).split(H, dim=2)  # each [B, T, H]
        q, k, v = (t.view(B, T, self.n_heads, H // self.n_heads).transpose(1, 2) for t in (q, k, v))
        drop = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=drop)  # [B, nh, T, hd]
        y = y.transpose(1, 2).reshape(B, T, H)
        x = x + self.resid_drop(self.attn_out(y))
        return x + self.resid_drop(self.ffn(self.ffn_norm(x)))


class SASRec(SequentialRecommender):
    trains_all_positions = True

    def __init__(self, n_items: int, config: SASRecConfig):
        super().__init__(n_items, config.max_len)
        self.config = config
        self.item_emb = nn.Embedding(n_items + 1, config.hidden, padding_idx=n_items)
        self.pos_emb = nn.Embedding(config.max_len, config.hidden)  # index 0 = newest item
        self.emb_drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            _Block(config.hidden, config.n_heads, config.dropout) for _ in range(config.n_blocks)
        )
        self.final_norm = nn.LayerNorm(config.hidden)
        self.apply(init_weights)

    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        return self.encode_positions(seqs)[:, -1]  # [B, H]: the newest position

    def encode_positions(self, seqs: torch.Tensor, item_table: torch.Tensor | None = None) -> torch.Tensor:
        """seqs [B, T] left-padded -> states at every position [B, T, H].

        The state at position t has seen only items up to t (causal), so it predicts item t + 1:
        all-position training. States at padding positions are meaningless; leave them out.
        ``item_table`` [N + 1, H] replaces the id embeddings as the input item vectors (the
        text-aware subclass, :mod:`recmodels.textrec`, passes its text + id vectors).
        """
        B, T = seqs.shape  # batch, time (T <= max_len, left-padded)
        assert self.max_len >= T, f"sequence length {T} exceeds max_len {self.max_len}"
        real = seqs != self.pad_id  # [B, T]
        newest_first = torch.arange(T - 1, -1, -1, device=seqs.device)  # [T]
        items = self.item_emb(seqs) if item_table is None else F.embedding(seqs, item_table)  # [B, T, H]
        x = items * math.sqrt(self.config.hidden) + self.pos_emb(newest_first)  # [B, T, H]
        x = self.emb_drop(x) * real.unsqueeze(-1)
        # Causal attention over real items; every position may attend to itself so a
        # fully padded (empty) history still has a defined, padding-independent state.
        causal = torch.ones(T, T, dtype=torch.bool, device=seqs.device).tril()  # [T, T]
        eye = torch.eye(T, dtype=torch.bool, device=seqs.device)
        mask = (causal & real.unsqueeze(1)) | eye  # [B, T(query), T(key)]
        mask = mask.unsqueeze(1)  # [B, 1, T, T]
        for block in self.blocks:
            x = block(x, mask) * real.unsqueeze(-1)
        return self.final_norm(x)  # [B, T, H]

    def output_embeddings(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.item_emb.weight[: self.n_items], None

    def per_item_tables(self) -> tuple[nn.Embedding, ...]:
        return (self.item_emb,)

    def sampled_item_rows(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.item_emb(ids), None  # the tied output vectors, gathered through the table
