"""What the loops of one process compute once and share: :class:`LoopCaches`.

Created by the caller and passed in (the service keeps one on its loop runner, an evaluation on
its context, a test builds its own), never held at module level: a process decides what it
shares and for how long, and nothing leaks between tests.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from graph.agents.evidence import ItemVectors, LoopCalibration
from recmodels.scorer import Scorer


@dataclass(eq=False)
class LoopCaches:
    """Loop calibrations and item vectors, each computed once per key."""

    calibrations: dict[str, LoopCalibration] = field(default_factory=dict)
    """By (calibration key, artifact): :func:`graph.calibration.loop_calibration`'s results."""
    text_vectors: dict[str, ItemVectors] = field(default_factory=dict)
    """MiniLM item vectors by catalog fingerprint (:func:`graph.item_vectors.load_vectors`)."""
    collaborative_vectors: dict[Scorer, ItemVectors] = field(default_factory=dict)
    """The reward model's item embeddings by model (the same load_vectors): the user and the
    recommendation agents, offline and LLM, read one copy."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while an entry is read or stored (the service's worker threads may share it)."""
