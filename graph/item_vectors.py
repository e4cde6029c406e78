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
from steering.similarity import text_item_vectors

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
    """The item vectors of backend ``name`` (None for ``none``), kept in ``caches``: the text vectors
    once per catalog version, the collaborative ones once per reward model (without caches they are
    read from the file cache or the model each time)."""
    if name == "none":
        return None
    if name == "collaborative":
        if caches is None:
            return _collaborative_vectors(reward)
        # One copy per model, whichever agents read it: [N, H] floats, 256 MB at 10^6 items.
        with caches.lock:
            if reward not in caches.collaborative_vectors:
                caches.collaborative_vectors[reward] = _collaborative_vectors(reward)
            return caches.collaborative_vectors[reward]
    if name == "text":
        if caches is None:
            return _text_vectors(config, catalog)
        with caches.lock:  # once per catalog version (the file cache is per data dir)
            if catalog.fingerprint not in caches.text_vectors:
                caches.text_vectors[catalog.fingerprint] = _text_vectors(config, catalog)
            return caches.text_vectors[catalog.fingerprint]
    raise ValueError(f"unknown similarity backend {name!r}")


def _collaborative_vectors(reward: Scorer) -> ItemVectors:
    # The model's weights as they are (memory-mapped): the floats steering's CollaborativeSimilarity
    # normalises, normalised twice as they were when the agents read its copy.
    weight, _bias = reward.model.output_embeddings()
    return ItemVectors("collaborative", weight, normalize_twice=True)


def _text_vectors(config: LoopConfig, catalog: Dataset) -> ItemVectors:
    cache = embedding_cache_path(config.data_dir, catalog.name, catalog.fingerprint)
    return ItemVectors("text", torch.from_numpy(text_item_vectors(catalog, cache_path=cache)))
