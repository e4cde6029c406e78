"""How a model is trained, apart from what the model is (its own config: ``SASRecConfig`` ...).

One :class:`TrainConfig` for every model: ``recloop train --set KEY=VALUE`` and the presets
(:mod:`recmodels.presets`) override fields of either, and an artifact's ``config`` records both.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


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


TRAIN_FIELDS = frozenset(f.name for f in dataclasses.fields(TrainConfig))
