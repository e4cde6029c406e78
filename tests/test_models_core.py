"""The three models: contract (shapes, padding, gathering), training, and the evaluation protocol."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from recmodels import evaluation, training
from recmodels.base import SequentialRecommender, mask_seen, pad_histories
from recmodels.dataset import Dataset, Row
from recmodels.evaluation import evaluate_model, full_ranking_stats, ranking_summary
from recmodels.losses import full_softmax_ce
from recmodels.registry import MODEL_NAMES, build_model, make_config
from recmodels.scorer import Scorer, ScorerInfo
from recmodels.training import train, training_tensors

N_ITEMS = 60
HISTORIES = [[1, 2, 3], [], [4, 5, 6, 7, 8, 9, 10, 11, 12, 13], [59], [5, 5, 7]]


@pytest.fixture(params=MODEL_NAMES)
def model(request: pytest.FixtureRequest) -> SequentialRecommender:
    torch.manual_seed(0)
    return build_model(request.param, N_ITEMS).eval()


def test_scores_are_finite_with_the_documented_shapes(model: SequentialRecommender) -> None:
    seqs = pad_histories(HISTORIES, model.max_len, model.pad_id)
    logits = model.score_all(seqs)
    assert logits.shape == (len(HISTORIES), N_ITEMS)
    assert torch.isfinite(logits).all()
    weight, bias = model.output_embeddings()
    assert weight.shape[0] == N_ITEMS and (bias is None or bias.shape == (N_ITEMS,))


def test_score_candidates_equals_score_all_gathered(model: SequentialRecommender) -> None:
    seqs = pad_histories(HISTORIES, model.max_len, model.pad_id)
    candidates = torch.randint(0, N_ITEMS, (len(HISTORIES), 7), generator=torch.Generator().manual_seed(3))
    gathered = model.score_all(seqs).gather(1, candidates)
    torch.testing.assert_close(model.score_candidates(seqs, candidates), gathered)


def test_left_padding_does_not_change_scores(model: SequentialRecommender) -> None:
    full = pad_histories(HISTORIES, model.max_len, model.pad_id)  # [B, 10]
    short = full[:, -3:]  # the same newest items with less (or no) left padding
    keep = [i for i, h in enumerate(HISTORIES) if len(h) <= 3]
    torch.testing.assert_close(model.score_all(short)[keep], model.score_all(full)[keep])


def test_a_row_scores_the_same_alone_and_in_a_batch(model: SequentialRecommender) -> None:
    batch = pad_histories(HISTORIES, model.max_len, model.pad_id)
    for i in range(len(HISTORIES)):
        torch.testing.assert_close(model.score_all(batch[i : i + 1])[0], model.score_all(batch)[i])


def test_histories_longer_than_the_window_are_truncated_to_the_newest(model: SequentialRecommender) -> None:
    long = list(range(20, 40))
    a = model.score_all(pad_histories([long], model.max_len, model.pad_id))
    b = model.score_all(pad_histories([long[-model.max_len :]], model.max_len, model.pad_id))
    torch.testing.assert_close(a, b)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_a_few_steps_on_a_tiny_slice_lower_a_finite_loss(name: str, ml_dataset: Dataset) -> None:
    torch.manual_seed(0)
    model = build_model(name, ml_dataset.n_items, dropout=0.0)
    seqs, targets = training_tensors(ml_dataset.rows("train")[:128], model.max_len, model.pad_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        loss = full_softmax_ce(model, seqs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(x) for x in losses)
    assert losses[0] == pytest.approx(math.log(ml_dataset.n_items), rel=0.2)  # near-uniform at start
    assert losses[-1] < 0.7 * losses[0]


def test_train_selects_on_validation_and_reports_cost(ml_dataset: Dataset, tmp_path: Path) -> None:
    result = train(ml_dataset, "gru4rec", models_dir=tmp_path, epochs=3, max_train_rows=1500, progress=False)
    assert result.artifact_path == tmp_path / "movielens" / "gru4rec.pt" and result.artifact_path.is_file()
    assert result.epoch_losses[-1] < result.epoch_losses[0]
    m = result.metrics
    assert 1 <= m["best_epoch"] <= m["epochs_run"] == 3
    assert m["train_rows"] == 1500 and m["seconds_per_epoch"] > 0 and m["peak_rss_mb"] > 0
    assert 0.0 <= m["val_hr1_expected"] <= 1.0


@pytest.mark.parametrize("patience", [1, 3])
def test_training_stops_after_patience_epochs_without_a_better_validation_score(
    patience: int, ml_dataset: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scores = iter([0.30, 0.40, 0.35, 0.20, 0.39, 0.38, 0.37, 0.36])  # best at epoch 2, then only worse
    monkeypatch.setattr(training, "_validate", lambda model, rows: {training.SELECTION_METRIC: next(scores)})
    result = train(
        ml_dataset, "gru4rec", models_dir=tmp_path, epochs=8, max_train_rows=300, progress=False,
        config_overrides={"patience": patience},
    )  # fmt: skip
    assert result.best_epoch == 2 and result.epochs_run == 2 + patience
    with pytest.raises(ValueError, match="patience must be >= 1"):
        train(ml_dataset, "gru4rec", models_dir=tmp_path, epochs=2, config_overrides={"patience": 0})


def test_unknown_models_and_config_fields_are_named() -> None:
    with pytest.raises(ValueError, match="unknown model 'bert4rec'"):
        build_model("bert4rec", 10)
    with pytest.raises(ValueError, match=r"unknown config field\(s\) \['hiden'\]"):
        make_config("sasrec", hiden=32)


class _ScoresById(SequentialRecommender):
    """Hand-made scores for exact metric checks: item i scores i, whatever the history."""

    def __init__(self, n_items: int):
        super().__init__(n_items, max_len=10)
        self.weight = nn.Parameter(torch.arange(n_items, dtype=torch.float).unsqueeze(1))  # [N, 1]

    def encode(self, seqs: torch.Tensor) -> torch.Tensor:
        return torch.ones(seqs.shape[0], 1)  # [B, 1]

    def output_embeddings(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.weight, None


def test_full_ranking_masks_history_and_is_exact_on_a_hand_made_case() -> None:
    model = _ScoresById(30)  # ranking is 29, 28, 27, ...
    rows = [
        Row(history=(29, 28, 5), next=27, len_seq=3),  # 29 and 28 masked: rank 0
        Row(history=(1, 2, 3), next=25, len_seq=3),  # 29..26 above: rank 4
        Row(history=(1, 2, 3), next=10, len_seq=3),  # 19 above: outside the top 10
        Row(history=(10, 11, 12), next=11, len_seq=3),  # target in the history: never retrieved
    ]
    stats = full_ranking_stats(model, rows)
    assert [s.rank for s in stats] == [0, 4, 19, 30]
    assert [s.pool_size for s in stats] == [26, 26, 26, 27]
    summary = ranking_summary(stats)
    assert summary["hit10"] == pytest.approx(2 / 4)
    assert summary["ndcg10"] == pytest.approx((1.0 + 1 / math.log2(6)) / 4)
    assert summary["hr1_expected"] > 0.25  # row 0 always wins its candidates


def test_evaluate_model_reports_the_contract_keys(ml_scorers: dict[str, Scorer], ml_dataset: Dataset) -> None:
    result = evaluate_model(ml_scorers["sasrec"], ml_dataset, split="test", seeds=(0, 1))
    assert result["n_rows"] == 95 and result["n_dropped"] == 0
    assert set(result["hr1_per_seed"]) == {"0", "1"}
    assert result["hr1_mean"] == pytest.approx(sum(result["hr1_per_seed"].values()) / 2)
    for key in ("hr1_mean", "hr1_std", "hit10", "ndcg10", "hr1_expected"):
        assert 0.0 <= result[key] <= 1.0
    assert "len_seq < 3" in result["note"]


def test_sampled_hr1_of_a_perfect_scorer_is_one(ml_dataset: Dataset) -> None:
    rows, _ = ml_dataset.eval_rows("val")

    class _Oracle(Scorer):  # knows each row's target: checks the protocol plumbing, not a model
        def score_batch(self, histories, candidates):  # type: ignore[override]
            targets = [target_of[tuple(h)] for h in histories]
            return [[float(c == t) for c in cands] for cands, t in zip(candidates, targets, strict=True)]

    target_of = {r.history: r.next for r in rows}
    assert len(target_of) == len(rows)
    info = ScorerInfo("oracle", "movielens", "", ml_dataset.n_items)
    oracle = _Oracle(_ScoresById(ml_dataset.n_items), info)
    assert evaluate_model(oracle, ml_dataset, split="val", seeds=(0,))["hr1_mean"] == 1.0


def test_loss_matches_torch_and_masks_history_but_never_the_target() -> None:
    torch.manual_seed(0)
    model = build_model("sasrec", N_ITEMS).eval()
    seqs = pad_histories([[1, 2, 3], [4, 5], []], model.max_len, model.pad_id)
    targets = torch.tensor([3, 6, 7])  # row 0's target is also in its history
    logits = model.score_all(seqs)
    plain = torch.nn.functional.cross_entropy(logits, targets, label_smoothing=0.1)
    torch.testing.assert_close(full_softmax_ce(model, seqs, targets, 0.1), plain)

    masked_logits = logits.clone()
    masked_logits[0, [1, 2]] = float("-inf")  # 3 is the target: kept
    masked_logits[1, [4, 5]] = float("-inf")
    expected = torch.nn.functional.cross_entropy(masked_logits, targets)
    masked = full_softmax_ce(model, seqs, targets, mask_history=True)
    torch.testing.assert_close(masked, expected)
    assert torch.isfinite(full_softmax_ce(model, seqs, targets, 0.1, mask_history=True))


def test_caser_with_tied_weights_scores_with_its_input_embeddings() -> None:
    model = build_model("caser", N_ITEMS, tie_weights=True).eval()
    weight, bias = model.output_embeddings()
    assert weight.data_ptr() == model.item_emb.weight.data_ptr() and weight.shape == (N_ITEMS, 64)
    seqs = pad_histories(HISTORIES, model.max_len, model.pad_id)
    candidates = torch.tensor([[0, 1, 59]] * len(HISTORIES))
    torch.testing.assert_close(model.score_candidates(seqs, candidates), model.score_all(seqs)[:, [0, 1, 59]])


def test_ranking_stats_in_small_score_blocks_are_the_stats_of_one_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # At a million items 512 rows of scores were 2 GB; blocks bound them. Same stats either way.
    torch.manual_seed(0)
    model = build_model("sasrec", 40, hidden=8, max_len=5)
    histories = torch.randint(0, 40, (37, 4)).tolist()
    rows = [Row(tuple(h), int(t), 4) for h, t in zip(histories, torch.randint(0, 40, (37,)), strict=True)]
    rows.append(Row((3, 5, 3), 3, 3))  # a repeat: the target in its own history
    whole = full_ranking_stats(model, rows)
    scores = model.eval().score_all(pad_histories([r.history for r in rows], 5, 40)).detach()
    monkeypatch.setattr(evaluation, "SCORE_BLOCK_ELEMENTS", 3 * 40)  # three rows a block
    assert evaluation.rows_per_block(40) == 3
    assert full_ranking_stats(model, rows) == whole
    assert evaluation.ranking_stats_from_scores(scores, rows) == whole


def _ranking_stats_by_masking(scores: torch.Tensor, rows: list[Row]) -> list[tuple[int, int, int]]:
    """The stats as first written: the history masked in a copy of every score, then counted."""
    N = scores.shape[1]
    seqs = pad_histories([r.history for r in rows], max(1, *(len(r.history) for r in rows)), N)
    masked = mask_seen(scores, seqs, N)
    targets = torch.as_tensor([r.next for r in rows])
    target_scores = scores.gather(1, targets.unsqueeze(1))
    ids = torch.arange(N).unsqueeze(0)
    above = (masked > target_scores) | ((masked == target_scores) & (ids < targets.unsqueeze(1)))
    above &= (ids != targets.unsqueeze(1)) & (masked != float("-inf"))
    return [
        (N if r.next in r.history else n, n, N - len(set(r.history) - {r.next}) - 1)
        for r, n in zip(rows, above.sum(dim=1).tolist(), strict=True)
    ]


def test_ranking_stats_count_as_masking_the_history_would_with_ties_repeats_and_minus_infinity() -> None:
    generator = torch.Generator().manual_seed(5)
    N = 25
    scores = torch.randint(0, 6, (200, N), generator=generator).float()  # many ties
    scores[torch.rand(200, N, generator=generator) < 0.1] = float("-inf")
    histories = torch.randint(0, N, (200, 6), generator=generator).tolist()
    lengths = torch.randint(0, 7, (200,), generator=generator).tolist()
    targets = torch.randint(0, N, (200,), generator=generator).tolist()
    rows = [Row(tuple(h[:k]), t, max(1, k)) for h, k, t in zip(histories, lengths, targets, strict=True)]
    rows += [Row((4, 4, 9), 4, 3), Row((), 3, 1), Row((2, 7, 2), 7, 3)]  # repeats, empty history
    scores = torch.cat([scores, torch.full((3, N), 1.0)])  # every item tied
    scores[-1, 7] = float("-inf")  # a target scored -inf in its own history
    stats = evaluation.ranking_stats_from_scores(scores, rows)
    assert [(s.rank, s.n_outranking, s.pool_size) for s in stats] == _ranking_stats_by_masking(scores, rows)


def test_scoring_a_pool_larger_than_one_gather_gives_the_floats_of_one_gather(one_torch_thread):
    """score_candidates gathers a steering pool's weights 2^16 candidates at a time (recmodels/base.py):
    the same floats as one [1, C, H] block, so a 10^6-item pool is planned as before."""
    from recmodels import base
    from recmodels.sasrec import SASRec, SASRecConfig

    torch.manual_seed(0)
    n_items = 3 * base._GATHERED + 1234
    model = SASRec(n_items, SASRecConfig(hidden=64)).eval()
    seqs = torch.tensor([[0, 0, 0, 0, 0, 5, 9, 17, 4000, 150000]])
    candidates = torch.randperm(n_items)[: n_items - 777].unsqueeze(0)
    with torch.no_grad():
        chunked = model.score_candidates(seqs, candidates)
        weight, _ = model.output_embeddings()
        one_block = torch.einsum("bh,bch->bc", model.encode(seqs), weight[candidates])
    assert torch.equal(chunked, one_block)


def test_the_gather_buffer_serves_a_batch_and_training_gathers_afresh(one_torch_thread):
    """Without gradients one buffer holds each slice of weights in turn (a batch of two histories
    included); with them every slice is its own tensor: the same floats either way."""
    from recmodels import base
    from recmodels.sasrec import SASRec, SASRecConfig

    torch.manual_seed(1)
    n_items = base._GATHERED + 4321
    model = SASRec(n_items, SASRecConfig(hidden=32)).eval()
    seqs = torch.tensor([[0, 0, 3, 8, 60000], [0, 1, 2, 3, 4]])
    candidates = torch.stack([torch.randperm(n_items)[: n_items - 10] for _ in range(2)])  # [2, C]
    with torch.no_grad():
        buffered = model.score_candidates(seqs, candidates)
        weight, _ = model.output_embeddings()
        states = model.encode(seqs)
        slices = candidates.split(base._GATHERED, dim=1)
        fresh = torch.cat([torch.einsum("bh,bch->bc", states, weight[p]) for p in slices], dim=1)
    assert torch.equal(buffered, fresh)
    with_grad = model.score_candidates(seqs, candidates)
    assert with_grad.requires_grad and torch.equal(with_grad.detach(), fresh)
