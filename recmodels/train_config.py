"""How a model is trained, apart from what the model is (its own config: ``SASRecConfig`` ...).

One :class:`TrainConfig` for every model: ``recloop train --set KEY=VALUE`` and the presets
(:mod:`recmodels.presets`) override fields of either, and an artifact's ``config`` records both.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

LOSSES = ("auto", "softmax", "gbce")
DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str) -> torch.device:
    """``auto``: CUDA when a GPU is present, else the CPU."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA GPU is visible to torch (install a CUDA build of torch)")
    return torch.device(device)


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 1e-3
    weight_decay: float = 1e-6  # L2 grid 1e-3..1e-7 (AFL setup)
    batch_size: int = 256
    epochs: int = 40
    patience: int = 6  # early stopping: epochs without a better validation score
    label_smoothing: float = 0.0
    mask_history: bool = True  # leave history items out of the training softmax (never evaluated)
    # Loss at every position of each window, not only the newest (models with encode_positions: SASRec).
    all_positions: bool = False
    # softmax: cross-entropy over every item, O(N) per row; gbce: gSASRec's calibrated BCE against
    # `negatives` uniform items, O(negatives). auto: softmax up to `sampled_above` items (cheap there
    # and the paper's numbers use it), gbce above (1M items x 256 rows is ~1 GB of logits a batch).
    loss: str = "auto"
    sampled_above: int = 20_000
    negatives: int = 256  # gSASRec's setting
    # One draw of `negatives` per batch, shared by its rows (gSASRec draws per row): each row's loss is
    # the same in expectation and a step reads 256 item rows instead of 65k (recmodels.losses.gbce).
    shared_negatives: bool = True
    gbce_t: float = 0.75  # gSASRec's calibration t (0: plain BCE, 1: fully calibrated)

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        if not 0.0 <= self.gbce_t <= 1.0 or self.negatives < 1:
            raise ValueError("gbce_t must lie in [0, 1] and negatives be >= 1")

    def loss_for(self, n_items: int) -> str:
        """The loss trained for a catalog of ``n_items``: ``loss``, with auto resolved."""
        if self.loss != "auto":
            return self.loss
        return "gbce" if n_items > self.sampled_above else "softmax"


TRAIN_FIELDS = frozenset(f.name for f in dataclasses.fields(TrainConfig))
