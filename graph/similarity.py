"""Item vectors the offline user agent may read for similarity evidence, by backend name.

``collaborative``: the reward model's item embeddings (always there). ``text``: the bundled
MiniLM sentence model over each item's title, genres and year (the ``embeddings`` extra), the
same cached vectors steering uses (:mod:`graph.steering.similarity`). Which one the agent uses,
if any, is chosen on validation (:mod:`graph.calibration`); only that one is loaded to serve.
"""

from __future__ import annotations

import logging
import threading

import torch

from graph.agents.evidence import ItemVectors
from graph.config import LoopConfig
from graph.steering.similarity import (
    CollaborativeSimilarity,
    embedding_cache_path,
    text_available,
    text_item_vectors,
)
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer

log = logging.getLogger(__name__)

_TEXT: dict[str, ItemVectors] = {}
_TEXT_LOCK = threading.Lock()


def available_backends() -> tuple[str, ...]:
    """Backends this installation offers: collaborative always, text with the embeddings extra."""
    return ("collaborative", "text") if text_available() else ("collaborative",)


def load_vectors(name: str, config: LoopConfig, catalog: Dataset, reward: Scorer) -> ItemVectors | None:
    """The item vectors of backend ``name`` (None for ``none``)."""
    if name == "none":
        return None
    if name == "collaborative":
        return ItemVectors(name, CollaborativeSimilarity(reward).item_vectors)
    if name == "text":
        with _TEXT_LOCK:  # once per process and catalog version (the file cache is per data dir)
            if catalog.fingerprint not in _TEXT:
                cache = embedding_cache_path(config.data_dir, catalog.name, catalog.fingerprint)
                vectors = torch.from_numpy(text_item_vectors(catalog, cache_path=cache))
                _TEXT[catalog.fingerprint] = ItemVectors(name, vectors)
            return _TEXT[catalog.fingerprint]
    raise ValueError(f"unknown similarity backend {name!r}")
