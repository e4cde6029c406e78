"""The student command model: a light head over the bundled MiniLM encoder's token vectors.

The encoder (all-MiniLM-L6-v2, frozen) turns a command into contextual token vectors. The
head adds one small transformer layer on top, with each mention's tokens marked by its kind,
then predicts per mention a role (none / wanted / unwanted / lifted / like / less like) from the
mention's pooled vectors and the sentence, and per command three flags: reset, and a wish on
the wanted / unwanted side that no catalog field holds (free soft text).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from recmodels.text import TEXT_DIM
from steering.lexicon import CLAUSE_BREAK, CLAUSE_BREAK_TOKENS, CUE_WORD, CUE_WORDS
from steering.mentions import MENTION_KINDS, Mention
from steering.reading import ALLOWED_ROLES, N_ROLES

MAX_TOKENS = 96
ENCODER_LAYERS = 6
"""MiniLM-L6's depth: a student trained over fewer of its layers reads the truncated encoder."""
_CUE_INDEX = {w: i for i, w in enumerate(CUE_WORDS)}
SENTENCE_FLAGS = ("reset", "soft_positive", "soft_negative")


@dataclass(frozen=True)
class StudentConfig:
    dim: int = TEXT_DIM
    hidden: int = 256
    layers: int = 0
    """Extra transformer layers over the encoder's vectors (0: the encoder's context alone)."""
    heads: int = 4
    dropout: float = 0.1
    window: int = 4
    """Tokens either side of a mention pooled as its context ("anything but", "is fine again")."""
    encoder_layers: int = 4
    """How many of MiniLM's layers the student reads (fewer: faster; four, three of them tuned,
    read the natural development sets better than three frozen ones at about the same cost)."""
    quantized: bool = True
    """The frozen encoder's Linear layers as dynamic int8 (the same encoder in training and serving)."""
    tune_layers: int = 3
    """The top ones of those encoder layers that are trained with the head (stored in the artifact,
    in float32); the frozen layers below them are what :class:`CommandEncoder` computes. 0: the
    whole encoder is frozen and only the head learns."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Features:
    """One command, encoded: token vectors and its mentions as token masks."""

    tokens: torch.Tensor  # [T, D] float
    spans: torch.Tensor  # [M, T] bool
    kinds: torch.Tensor  # [M] long
    truncated: bool = False
    boundaries: torch.Tensor | None = None  # [T] bool: clause breaks (, ; . ! ? but), where context stops
    cues: torch.Tensor | None = None  # [M, 2 * len(CUE_WORDS)]: cue words left / right of each mention


class CommandEncoder:
    """Frozen MiniLM token vectors with character offsets (loaded once per process)."""

    def __init__(self, sentence_model: Any, *, layers: int = ENCODER_LAYERS, quantized: bool = False):
        self.tokenizer = sentence_model.tokenizer
        self._sentence_model = sentence_model
        self.layers, self.quantized = layers, quantized
        transformer = sentence_model[0].auto_model.eval()
        if layers < len(transformer.encoder.layer) or quantized:
            # A private copy: the sentence model may serve text similarity elsewhere in the process.
            transformer = copy.deepcopy(transformer)
            transformer.encoder.layer = nn.ModuleList(list(transformer.encoder.layer)[:layers])
            if quantized:
                transformer = torch.ao.quantization.quantize_dynamic(
                    transformer, {nn.Linear}, dtype=torch.qint8
                )
        self.transformer = transformer
        vocab = self.tokenizer.get_vocab()
        self._breaks = torch.tensor(sorted(vocab[w] for w in CLAUSE_BREAK_TOKENS if w in vocab))

    def configured(self, config: StudentConfig) -> CommandEncoder:
        """This encoder cut to the frozen depth (and precision) a student was trained over."""
        frozen = config.encoder_layers - config.tune_layers
        if (frozen, config.quantized) == (self.layers, self.quantized):
            return self
        return CommandEncoder(self._sentence_model, layers=frozen, quantized=config.quantized)

    def top_layers(self, config: StudentConfig) -> list[nn.Module]:
        """Float32 copies of the pretrained layers a student fine-tunes (its starting point)."""
        layers = self._sentence_model[0].auto_model.encoder.layer
        first = config.encoder_layers - config.tune_layers
        return [copy.deepcopy(layer) for layer in list(layers)[first : config.encoder_layers]]

    def boundaries(self, texts: Sequence[str]) -> list[torch.Tensor]:
        """Clause-break flags per token (the tokenizer alone: no model call)."""
        out = []
        for text in texts:
            ids = torch.tensor(self.tokenizer(text, truncation=True, max_length=MAX_TOKENS)["input_ids"])
            breaks = torch.isin(ids, self._breaks)
            breaks[0] = breaks[-1] = True
            out.append(breaks)
        return out

    @torch.no_grad()
    def encode(self, texts: Sequence[str], mentions: Sequence[Sequence[Mention]]) -> list[Features]:
        if self.quantized and len(texts) > 1:
            # Dynamic int8 scales a batch's activations by their range over the whole batch, padding
            # included, so a command's vectors would depend on its batch-mates: one at a time, as served.
            return [
                f for text, found in zip(texts, mentions, strict=True) for f in self.encode([text], [found])
            ]
        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=MAX_TOKENS,
            return_offsets_mapping=True, return_tensors="pt",
        )  # fmt: skip
        offsets = batch.pop("offset_mapping")  # [B, T, 2]
        hidden = self.transformer(**batch).last_hidden_state  # [B, T, D]
        out = []
        for b, found in enumerate(mentions):
            length = int(batch["attention_mask"][b].sum())
            starts, ends = offsets[b, :length, 0], offsets[b, :length, 1]
            real = ends > starts  # [CLS]/[SEP] have empty offsets
            spans = torch.stack(
                [real & (starts < m.end) & (ends > m.start) for m in found]
            ) if found else torch.zeros(0, length, dtype=torch.bool)  # fmt: skip
            kinds = torch.tensor([MENTION_KINDS.index(m.kind) for m in found], dtype=torch.long)
            truncated = length == MAX_TOKENS
            ids = batch["input_ids"][b, :length]
            breaks = torch.isin(ids, self._breaks)
            breaks[0] = breaks[length - 1] = True  # [CLS] and [SEP]
            cues = mention_cues(texts[b], found)
            out.append(Features(hidden[b, :length].clone(), spans, kinds, truncated, breaks, cues))
        return out


def mention_cues(text: str, mentions: Sequence[Mention]) -> torch.Tensor:
    """[M, 2C] cue words in each mention's clause, before it and after it (the clause ends at a break;
    "but" right before the mention stays, as in "anything but comedies")."""
    folded = text.casefold().replace("\u2019", "'")
    cues = torch.zeros(len(mentions), 2 * len(CUE_WORDS))
    for m, mention in enumerate(mentions):
        left = folded[: mention.start]
        breaks = [b.end() for b in CLAUSE_BREAK.finditer(left)]
        if (
            breaks
            and left[breaks[-1] - 3 : breaks[-1]] == "but"
            and left[: breaks[-1] - 3].rstrip().endswith(("anything", "nothing", "everything", "all"))
        ):
            breaks.pop()  # "anything but X": the "but" belongs to the cue
        left = left[breaks[-1] :] if breaks else left
        right = folded[mention.end :]
        stop = CLAUSE_BREAK.search(right)
        right = right[: stop.start()] if stop else right
        for offset, part in ((0, left), (len(CUE_WORDS), right)):
            for word in CUE_WORD.findall(part):
                index = _CUE_INDEX.get(word)
                if index is not None:
                    cues[m, offset + index] = 1.0
    return cues


def _role_mask() -> torch.Tensor:
    mask = torch.full((len(MENTION_KINDS), N_ROLES), float("-inf"))
    for k, kind in enumerate(MENTION_KINDS):
        for role in ALLOWED_ROLES[kind]:
            mask[k, int(role)] = 0.0
    return mask


def build_student(config: StudentConfig, encoder: CommandEncoder) -> CommandStudent:
    """A new student; one that fine-tunes encoder layers starts from the encoder's own."""
    return CommandStudent(config, encoder.top_layers(config) if config.tune_layers else None)


class CommandStudent(nn.Module):
    def __init__(self, config: StudentConfig, top_layers: Sequence[nn.Module] | None = None):
        super().__init__()
        self.config = config
        d = config.dim
        self.kind_marker = nn.Embedding(len(MENTION_KINDS), d)
        self.tuned = None
        if config.tune_layers:
            if top_layers is None or len(top_layers) != config.tune_layers:
                raise ValueError(f"a student that tunes {config.tune_layers} encoder layers needs them")
            self.tuned = nn.ModuleList(top_layers).train()
            # Marks on the input of pretrained layers: small, as BERT's own embeddings are.
            nn.init.normal_(self.kind_marker.weight, std=0.02)
        self.context = None
        if config.layers:
            layer = nn.TransformerEncoderLayer(
                d, config.heads, dim_feedforward=2 * config.hidden, dropout=config.dropout, batch_first=True
            )
            self.context = nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=False)
        self.role = nn.Sequential(
            nn.Linear(5 * d + 2 * len(CUE_WORDS), config.hidden),
            nn.GELU(),
            nn.Dropout(config.dropout),
            nn.Linear(config.hidden, N_ROLES),
        )
        self.flags = nn.Sequential(
            nn.Linear(d, config.hidden), nn.GELU(), nn.Dropout(config.dropout),
            nn.Linear(config.hidden, len(SENTENCE_FLAGS)),
        )  # fmt: skip
        self.register_buffer("role_mask", _role_mask(), persistent=False)

    def forward(self, batch: Sequence[Features]) -> tuple[torch.Tensor, torch.Tensor]:
        """Role logits [sum M, N_ROLES] (mentions of the batch in order) and flag logits [B, 3]."""
        length = max(f.tokens.shape[0] for f in batch)
        d = self.config.dim
        tokens = torch.zeros(len(batch), length, d)
        pad = torch.ones(len(batch), length, dtype=torch.bool)
        spans, owners, kinds, cues = [], [], [], []
        breaks = torch.ones(len(batch), length, dtype=torch.bool)
        for b, f in enumerate(batch):
            n = f.tokens.shape[0]
            tokens[b, :n] = f.tokens.float()
            pad[b, :n] = False
            if f.boundaries is not None:
                breaks[b, :n] = f.boundaries
            if f.spans.shape[0]:
                padded = torch.zeros(f.spans.shape[0], length, dtype=torch.bool)
                padded[:, :n] = f.spans
                spans.append(padded)
                owners += [b] * f.spans.shape[0]
                kinds.append(f.kinds)
                cues.append(
                    f.cues if f.cues is not None else torch.zeros(f.spans.shape[0], 2 * len(CUE_WORDS))
                )
        span_mask = torch.cat(spans) if spans else torch.zeros(0, length, dtype=torch.bool)  # [M, T]
        owner = torch.tensor(owners, dtype=torch.long)
        kind = torch.cat(kinds) if kinds else torch.zeros(0, dtype=torch.long)
        if span_mask.shape[0]:
            marks = torch.zeros(len(batch), length, d)
            marks.index_put_(
                (owner,),
                span_mask.float().unsqueeze(-1) * self.kind_marker(kind).unsqueeze(1),
                accumulate=True,
            )
            tokens = tokens + marks
        if self.tuned is not None:
            additive = pad[:, None, None, :].float() * torch.finfo(tokens.dtype).min  # [B, 1, 1, T]
            for layer in self.tuned:
                tokens = layer(tokens, attention_mask=additive)
                tokens = tokens[0] if isinstance(tokens, tuple) else tokens
        hidden = (
            tokens if self.context is None else self.context(tokens, src_key_padding_mask=pad)
        )  # [B, T, D]
        keep = (~pad).float().unsqueeze(-1)
        sentence = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1.0)  # [B, D]
        flags = self.flags(sentence)
        if not span_mask.shape[0]:
            return torch.zeros(0, N_ROLES), flags
        inside = span_mask.float()  # [M, T]
        left, right = _windows(span_mask, breaks[owner], self.config.window)
        near, _ = _windows(span_mask, breaks[owner], 2)
        mine = hidden[owner]  # [M, T, D]
        pooled = [_pool(mine, w) for w in (inside, left, right, near)]
        logits = (
            self.role(torch.cat([*pooled, sentence[owner], torch.cat(cues)], dim=-1)) + self.role_mask[kind]
        )
        return logits, flags


def _pool(hidden: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """[M, D] mean of hidden [M, T, D] under weights [M, T] (zeros where the weights are empty)."""
    return (hidden * weights.unsqueeze(-1)).sum(1) / weights.sum(1, keepdim=True).clamp(min=1.0)


def _windows(spans: torch.Tensor, breaks: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[M, T] masks of up to ``width`` tokens before and after each span [M, T], within its clause:
    a clause break (breaks [M, T]: punctuation, "but", [CLS]/[SEP], padding) ends the context."""
    positions = torch.arange(spans.shape[1]).unsqueeze(0)  # [1, T]
    big = spans.shape[1] + 1
    first = torch.where(spans, positions, big).min(1, keepdim=True).values  # [M, 1]
    last = torch.where(spans, positions, -1).max(1, keepdim=True).values
    before = breaks & (positions < first)
    stop_left = torch.where(before, positions, -1).max(1, keepdim=True).values  # the nearest break before
    after = breaks & (positions > last)
    stop_right = torch.where(after, positions, big).min(1, keepdim=True).values
    left = (positions < first) & (positions >= first - width) & (positions > stop_left)
    right = (positions > last) & (positions <= last + width) & (positions < stop_right)
    return left.float(), right.float()
