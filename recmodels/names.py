"""The names of the registered models, in one place (no torch import: settings read it too).

``recmodels.registry`` maps each name to its config and module and checks the two agree.
"""

from __future__ import annotations

from typing import Literal, get_args

ModelName = Literal["sasrec", "gru4rec", "caser", "textrec"]
MODEL_NAMES: tuple[ModelName, ...] = get_args(ModelName)
ID_MODEL_NAMES: tuple[ModelName, ...] = ("sasrec", "gru4rec", "caser")
"""Items known by their ids only (the paper's three)."""
