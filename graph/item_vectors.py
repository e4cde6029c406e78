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
from recmodels.text import TEXT_VECTORS_MAX_ITEMS, embedding_cache_path, text_available
from steering.similarity import CollaborativeSimilarity, text_item_vectors

log = logging.getLogger(__name__)


def available_backends(catalog: Dataset) -> tuple[str, ...]:
    """Backends offered for ``catalog``: collaborative always, text with the embeddings extra on a
    catalog of at most :data:`recmodels.text.TEXT_VECTORS_MAX_ITEMS` items (above it MiniLM takes
    hours, and the calibration's full-catalog rankings need every item's vector). Part of the
    calibration's key, so the lab and a worker compute the same tuple from the same catalog."""
    text = text_available() and catalog.n_items <= TEXT_VECTORS_MAX_ITEMS
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
