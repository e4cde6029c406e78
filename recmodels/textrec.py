"""TextRec: SASRec whose item vectors add a learned projection of frozen sentence vectors of the
item's text to its id embedding, so an item with no interactions is still scored from its text.

Item ``i``'s vector, on the input side (history) and the output side (scoring) alike::

    v_i = W (t_i - b) + known_i * m_i * e_i  [+ (1 - known_i * m_i) * u]        # [H]

``t_i`` is the frozen all-MiniLM-L6-v2 vector of the item's text (title, genres and year on
MovieLens, the artist name on LastFM, the game title on Steam; :mod:`recmodels.text`), ``b`` and
``W`` a learned shift and projection (384 -> H), ``e_i`` the id embedding, ``known_i`` 1 for the
items that are the target of some training row and 0 for the rest (cold items: text only, on both
sides), and ``m_i`` an id-dropout mask (DropoutNet, Volkovs et al., NeurIPS 2017): while training,
each step drops the id embedding of a random ``id_dropout`` share of the items, so that the text
path alone must rank them, which is all a cold item has. Optionally (``no_id_vector``) a learned
``u`` stands in for the missing id embedding, and (``text_only_steps``) a share of the steps drops
every id at once, training a pure text tower in the same space. The sequence encoder is SASRec's
(:mod:`recmodels.sasrec`; blocks, positions and training unchanged).

At inference, ``cold_scores="content"`` scores the items without an id embedding differently: by
the cosine of ``t_i`` to the mean text vector of the user's last few items, shifted and scaled so
that its mean and spread over the items *with* ids match the model's logits for this user. It
trades warm accuracy for cold (bench/HISTORY.md, TextRec's second round); checkpoints are selected without it.
``cold_popularity`` adds to that cosine a popularity predicted from the item's text (a ridge
regression of the known items' log training counts), which is what a cold item most lacks on a
popularity-driven catalog (Steam: 0.134 -> 0.165 on the held-out items).

What it follows and where it deviates:
- UniSRec (Hou et al., KDD 2022): frozen pre-trained text vectors through a parametric-whitening
  adaptor ``W (t - b)``. Deviations: one expert, not a mixture of experts; no contrastive
  pre-training across domains; the id embedding is *added* (UniSRec's inductive setting has no
  ids, its transductive one adds them, as here).
- MoRec (Yuan et al., SIGIR 2023): item vectors from a text encoder instead of ids only.
  Deviation: the encoder is frozen (MoRec fine-tunes it end to end; not affordable on 2 CPU cores).
- LLaRA's hybrid item tokens (Liao et al., SIGIR 2024) put an item's title tokens beside a
  projected ID-model vector in an LLM prompt. Here the roles are reversed: a small sequential
  model reads a projected *text* vector beside its own id embedding; no LLM at training or serving.
- Cold items: ``known`` comes from the training rows, so an item added to the catalog after
  training (:meth:`TextRec.with_new_items`) or held out of training (``eval model --cold-items``)
  is scored from its text alone; training's softmax leaves the unknown items out, as a catalog
  that had not received them yet would.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from recmodels.base import SequentialRecommender, init_weights
from recmodels.sasrec import SASRec, SASRecConfig
from recmodels.text import TEXT_DIM, content_scores, fit_text_popularity, standardize

COLD_SCORES = ("model", "content")


@dataclass
class TextRecConfig(SASRecConfig):
    text_dim: int = TEXT_DIM  # MiniLM-L6 sentence vectors
    id_dropout: float = 0.3  # share of items trained text-only each step (DropoutNet); cold items need it
    use_ids: bool = True  # False: text-only item vectors (an ablation; every item is then "cold")
    # A learned vector u in place of the id embedding of every item without one (dropped this step,
    # or never a training target): v_i = W (t_i - b) + u. DropoutNet feeds such items a zero input
    # to learned layers, which amounts to the same learned constant.
    no_id_vector: bool = False
    # Share of training steps with *every* id dropped (inputs and outputs text only): a pure text
    # tower in the same space as the id + text vectors, the tower a cold item is scored with.
    text_only_steps: float = 0.0
    # How items without an id embedding are scored at inference: "model", by the text tower above;
    # "content", by the cosine of their frozen text vector to the mean of the user's last
    # ``content_history`` items, put on this user's logit scale by matching the mean and spread of
    # both scores over the items that have ids (z-scores). Inference only: training is unchanged.
    cold_scores: str = "model"
    content_history: int = 5
    # With cold_scores="content": the weight of a popularity predicted from text (a ridge regression
    # of the known items' log training counts on their text vectors, fitted by attach_items) added
    # to the content cosine, both as z-scores over the items with ids. 0 leaves it out.
    cold_popularity: float = 0.0

    def __post_init__(self) -> None:
        if self.cold_scores not in COLD_SCORES:
            raise ValueError(f"cold_scores must be one of {COLD_SCORES}, got {self.cold_scores!r}")
        if self.content_history < 1:
            raise ValueError(f"content_history must be >= 1, got {self.content_history}")
        if self.cold_popularity < 0:
            raise ValueError(f"cold_popularity must be >= 0, got {self.cold_popularity}")
        if self.cold_popularity and self.cold_scores != "content":
            raise ValueError("cold_popularity needs cold_scores='content': it is a term of the content score")


class TextRec(SASRec):
    """SASRec over text + id item vectors. The text vectors and the set of known items are buffers,
    filled by :meth:`attach_items` before training and restored from the artifact on load."""

    needs_item_text = True  # training computes the dataset's text vectors and calls attach_items
    trains_all_positions = False  # the id dropout and text term are taken at the newest position only

    def __init__(self, n_items: int, config: TextRecConfig):
        super().__init__(n_items, config)
        self.config: TextRecConfig = config
        # [N + 1, D]: row N (padding) stays zero. Persistent: the artifact is self-contained.
        self.register_buffer("item_text", torch.zeros(n_items + 1, config.text_dim))
        # [N + 1]: 1 = the item has a trained id embedding. Until attach_items says otherwise every
        # item counts as known (a model built bare then behaves like SASRec plus a text term).
        known = torch.ones(n_items + 1)
        known[n_items] = 0.0
        self.register_buffer("known", known)
        self.text_shift = nn.Parameter(torch.zeros(config.text_dim))  # UniSRec's whitening shift b
        self.text_proj = nn.Linear(config.text_dim, config.hidden, bias=False)  # W
        init_weights(self.text_proj)
        if config.no_id_vector:  # only then, so artifacts of configs without it load unchanged
            self.no_id = nn.Parameter(torch.zeros(config.hidden))  # u
        if config.cold_popularity:  # the text-to-popularity regression attach_items fits (same reason)
            self.register_buffer("popularity_coef", torch.zeros(config.text_dim))  # [D]
            self.register_buffer("popularity_intercept", torch.zeros(()))
        self._content_cold = config.cold_scores == "content"  # off while training selects (below)

    @torch.no_grad()
    def attach_items(
        self, text_vectors: torch.Tensor, known_items: Iterable[int] | Mapping[int, int]
    ) -> None:
        """text_vectors [N, D] (row i: item i's text); known_items: the items with training rows,
        or how many rows each is the target of (what ``cold_popularity`` learns from; a plain
        iterable counts each item once)."""
        N, D = text_vectors.shape  # items, text dim
        assert self.n_items == N and self.config.text_dim == D, "text vectors must be [n_items, text_dim]"
        self.item_text[:N] = text_vectors
        self.known.zero_()
        counts = known_items if isinstance(known_items, Mapping) else dict.fromkeys(known_items, 1)
        ids = torch.as_tensor(sorted(counts), dtype=torch.long)
        if len(ids):
            assert int(ids.max()) < N and int(ids.min()) >= 0, "known items outside the catalog"
            self.known[ids] = 1.0
        if self.config.cold_popularity and len(ids) > 1:
            per_item = torch.zeros(N)
            per_item[ids] = torch.tensor([float(counts[int(i)]) for i in ids])
            coef, intercept = fit_text_popularity(text_vectors, per_item, self.known[:N] == 1)
            self.popularity_coef.copy_(coef)
            self.popularity_intercept.copy_(intercept)

    def item_table(self) -> torch.Tensor:
        """Item vectors [N + 1, H] (the padding row is not meaningful: inputs mask it). In training
        a fresh id-dropout draw each call; call once per step and reuse (see :meth:`score_all`)."""
        text = self.text_proj(self.item_text - self.text_shift)  # [N + 1, H]
        if not self.config.use_ids:
            return text
        keep = self.known  # [N + 1]
        config = self.config
        if self.training and config.text_only_steps > 0 and float(torch.rand(())) < config.text_only_steps:
            keep = torch.zeros_like(keep)
        elif self.training and config.id_dropout > 0:
            keep = keep * (torch.rand_like(keep) >= self.config.id_dropout)
        table = text + self.item_emb.weight * keep.unsqueeze(1)
        if self.config.no_id_vector:
            table = table + (1.0 - keep).unsqueeze(1) * self.no_id
        return table

    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        return self.encode_positions(seqs, self.item_table())[:, -1]  # [B, H]

    def output_embeddings(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.item_table()[: self.n_items], None

    def per_item_tables(self) -> tuple[nn.Embedding, ...]:
        return ()  # its item vectors are computed from text and ids: they train densely

    def sampled_item_rows(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        return SequentialRecommender.sampled_item_rows(self, ids)  # not SASRec's table gather

    def score_all(self, seqs: torch.Tensor) -> torch.Tensor:
        """seqs [B, T] -> logits [B, N], one item table (one id-dropout draw) for inputs and outputs.
        While training, the unknown items are left out (-inf): nothing taught the model about them."""
        table = self.item_table()  # [N + 1, H]
        states = self.encode_positions(seqs, table)[:, -1]  # [B, H]
        logits = states @ table[: self.n_items].T  # [B, N]
        if self.training and self.config.use_ids:
            logits = logits.masked_fill(self.known[: self.n_items] == 0, float("-inf"))
        elif not self.training and self._content_cold:
            logits = self._content_scored_cold(seqs, logits)
        return logits

    def score_candidates(self, seqs: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """seqs [B, T], candidates [B, C] -> logits [B, C]. With content-scored cold items a cold
        candidate's logit depends on every item's score for this user, so all are computed."""
        if self.training or not self._content_cold:
            return super().score_candidates(seqs, candidates)
        return self.score_all(seqs).gather(1, candidates)

    @contextmanager
    def selection_scores(self) -> Iterator[None]:
        """Checkpoints are selected on the text tower's scores: the content rescoring is a serving
        choice on top of the trained model, and must not pick which weights are kept."""
        content_cold, self._content_cold = self._content_cold, False
        try:
            yield
        finally:
            self._content_cold = content_cold

    def _content_scored_cold(self, seqs: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """logits [B, N] with the items without ids rescored from text similarity to the history.

        The raw MiniLM geometry ranks a cold item among its neighbours better than the learned text
        tower does where training rows are few (bench/HISTORY.md, TextRec's second round: Steam 0.134 against
        0.086 on the held-out rows);
        matching the two scores' mean and spread over the id items makes them comparable per user.
        """
        N = self.n_items
        cold = self.known[:N] == 0  # [N]
        if not bool(cold.any()) or bool(cold.all()):
            return logits
        content = content_scores(self.item_text, seqs, self.config.content_history)  # [B, N]
        score = standardize(content, ~cold)
        if self.config.cold_popularity:
            popularity = self.item_text[:N] @ self.popularity_coef + self.popularity_intercept  # [N]
            score = score + self.config.cold_popularity * standardize(popularity.unsqueeze(0), ~cold)
        warm_logits = logits[:, ~cold]  # [B, W]
        rescored = logits.clone()
        z = standardize(score, ~cold)[:, cold]  # [B, K]
        rescored[:, cold] = warm_logits.mean(1, keepdim=True) + warm_logits.std(1, keepdim=True) * z
        return rescored

    @torch.no_grad()
    def with_new_items(self, text_vectors: torch.Tensor) -> TextRec:
        """A copy over a catalog grown by ``k`` items (ids N .. N + k - 1, text_vectors [k, D]),
        scored from their text alone; the trained weights are unchanged. No retraining."""
        k, D = text_vectors.shape  # new items, text dim
        N, H = self.n_items, self.config.hidden
        grown = TextRec(N + k, self.config)
        state = self.state_dict()
        state["item_emb.weight"] = torch.cat([state["item_emb.weight"][:N], torch.zeros(k + 1, H)])
        state["item_text"] = torch.cat([state["item_text"][:N], text_vectors, torch.zeros(1, D)])
        state["known"] = torch.cat([state["known"][:N], torch.zeros(k + 1)])
        grown.load_state_dict(state)
        return grown.train(self.training)
