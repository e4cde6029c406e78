"""GRU4Rec: session-based recommendation with recurrent networks (Hidasi et al., ICLR 2016, arXiv 1511.06939).

A GRU reads the history oldest first; its final hidden state, projected to the
embedding size, scores every item against the item embedding table.

Deviations from the paper:
- Full-softmax cross-entropy over all items (the paper uses session-parallel
  mini-batches with BPR/TOP1 over in-batch negatives); later work by the same
  authors found cross-entropy to be the strongest loss.
- Item input is a learned embedding (not one-hot) tied to the output layer,
  as in RecBole's GRU4Rec; one GRU layer, dropout on the embeddings.
- Histories are left-padded windows (LLaRA protocol), not sessions; the GRU
  skips padding (packed sequences), so padding never changes a state.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from recmodels.base import SequentialRecommender, init_weights


@dataclass
class GRU4RecConfig:
    hidden: int = 64  # AFL/LLaRA setup
    max_len: int = 10  # LLaRA history window
    n_layers: int = 1
    dropout: float = 0.3


class GRU4Rec(SequentialRecommender):
    def __init__(self, n_items: int, config: GRU4RecConfig):
        super().__init__(n_items, config.max_len)
        self.config = config
        self.item_emb = nn.Embedding(n_items + 1, config.hidden, padding_idx=n_items)
        self.emb_drop = nn.Dropout(config.dropout)
        self.gru = nn.GRU(config.hidden, config.hidden, num_layers=config.n_layers, batch_first=True)
        self.out_drop = nn.Dropout(config.dropout)
        self.project = nn.Linear(config.hidden, config.hidden)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.GRU):
            for name, param in module.named_parameters():
                if "weight_hh" in name:
                    nn.init.orthogonal_(param)
                elif "weight_ih" in name:
                    nn.init.xavier_uniform_(param)
                else:
                    nn.init.zeros_(param)
        else:
            init_weights(module)

    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        B, T = seqs.shape  # batch, time (left-padded)
        lengths = (seqs != self.pad_id).sum(dim=1)  # [B]
        # Rotate each row so its real items come first (right padding), which packing needs.
        # An empty history keeps one padding step (zero embedding) so every row has a state.
        shift = (torch.arange(T, device=seqs.device).unsqueeze(0) + (T - lengths).unsqueeze(1)) % T  # [B, T]
        right_padded = seqs.gather(1, shift)  # [B, T]
        x = self.emb_drop(self.item_emb(right_padded))  # [B, T, H]
        packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        _, h_n = self.gru(packed)  # h_n [n_layers, B, H]
        return self.project(self.out_drop(h_n[-1]))  # [B, H]

    def output_embeddings(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.item_emb.weight[: self.n_items], None

    def per_item_tables(self) -> tuple[nn.Embedding, ...]:
        return (self.item_emb,)

    def sampled_item_rows(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.item_emb(ids), None  # the tied output vectors, gathered through the table
