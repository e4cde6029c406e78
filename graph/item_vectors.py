"""Item vectors the offline user agent may read for similarity evidence, by backend name.

``collaborative``: the reward model's item embeddings (always there). ``text``: the bundled
MiniLM sentence model over each item's title, genres and year (the ``embeddings`` extra), the
same cached vectors steering uses (:mod:`steering.similarity`). Which one the agent uses,
if any, is chosen on validation (:mod:`graph.calibration`); only that one is loaded to serve.
"""

from __future__ import annotations

import logging

import torch

from graph.agents.evidence import ItemVectors
from graph.caches import LoopCaches
from graph.config import LoopConfig
from recmodels.dataset import Dataset
from recmodels.scorer import Scorer
from recmodels.text import embedding_cache_path, text_available
from steering.similarity import CollaborativeSimilarity, text_item_vectors

log = logging.getLogger(__name__)


TEXT_SIMILARITY_MAX_ITEMS = 20_000
"""Above this many items the text backend is not offered. Its vectors need every item's text
through MiniLM (~110 titles/s on a 2-core CPU: 3 min at this size, 15 min at 10^5 items, 2.5 h at
10^6), and both the calibration's full-catalog rankings and serving read every item's vector, so a
subset will not do. The paper's catalogs (1,682 to 4,606 items) are far below it; above it the
collaborative backend (the reward model's own item embeddings, free) is the one tried."""


def available_backends(catalog: Dataset) -> tuple[str, ...]:
    """Backends offered for ``catalog``: collaborative always, text with the embeddings extra on a
    catalog of at most :data:`TEXT_SIMILARITY_MAX_ITEMS` items. Part of the calibration's key, so
    the lab and a worker compute the same tuple from the same catalog."""
    text = text_available() and catalog.n_items <= TEXT_SIMILARITY_MAX_ITEMS
    return ("collaborative", "text") if text else ("collaborative",)


def load_vectors(
    name: str, config: LoopConfig, catalog: Dataset, reward: Scorer, caches: LoopCaches | None = None
) -> ItemVectors | None:
    """The item vectors of backend ``name`` (None for ``none``); text vectors are kept in ``caches``
    (once per catalog version; without caches they are read from the file cache each time)."""
    if name == "none":
        return None
    if name == "collaborative":
        return ItemVectors(name, CollaborativeSimilarity(reward).item_vectors)
    if name == "text":
        if caches is None:
            return _text_vectors(config, catalog)
        with caches.lock:  # once per catalog version (the file cache is per data dir)
            if catalog.fingerprint not in caches.text_vectors:
                caches.text_vectors[catalog.fingerprint] = _text_vectors(config, catalog)
            return caches.text_vectors[catalog.fingerprint]
    raise ValueError(f"unknown similarity backend {name!r}")


def _text_vectors(config: LoopConfig, catalog: Dataset) -> ItemVectors:
    cache = embedding_cache_path(config.data_dir, catalog.name, catalog.fingerprint)
    return ItemVectors("text", torch.from_numpy(text_item_vectors(catalog, cache_path=cache)))
