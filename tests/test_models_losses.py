"""All-position training of SASRec (config ``all_positions``): targets, loss and the training loop."""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from recmodels.base import pad_histories
from recmodels.dataset import Dataset, Row
from recmodels.losses import all_positions_ce, full_softmax_ce, gbce, gbce_beta, gbce_from_logits, gbce_offset
from recmodels.optimizers import LazyItemsAdamW, sparse_item_gradients
from recmodels.registry import build_model
from recmodels.train_config import TrainConfig, resolve_device
from recmodels.training import train, training_tensors

N_ITEMS = 30
PAD = N_ITEMS


def test_all_position_targets_are_the_next_items_one_step_ahead() -> None:
    rows = [Row((1, 2, 3), 4, 3), Row((), 7, 1), Row(tuple(range(10, 16)), 16, 6)]
    seqs, targets = training_tensors(rows, max_len=4, pad_id=PAD, all_positions=True)
    assert seqs.tolist() == [[PAD, 1, 2, 3], [PAD, PAD, PAD, PAD], [12, 13, 14, 15]]
    assert targets.tolist() == [[PAD, 2, 3, 4], [PAD, PAD, PAD, 7], [13, 14, 15, 16]]
    # the newest position's target is the row's next item, as in last-position training
    _, last = training_tensors(rows, max_len=4, pad_id=PAD)
    assert targets[:, -1].tolist() == last.tolist()


def test_with_targets_only_at_the_newest_position_it_is_the_last_position_loss() -> None:
    torch.manual_seed(0)
    model = build_model("sasrec", N_ITEMS, max_len=6).eval()
    seqs = pad_histories([[1, 2, 3], [4, 5, 6, 7, 8, 9], [], [29]], 6, PAD)
    last = torch.tensor([3, 10, 0, 28])  # row 0's target is in its history: never masked
    targets = torch.full_like(seqs, PAD)
    targets[:, -1] = last
    for smoothing in (0.0, 0.1):
        for mask in (False, True):
            expected = full_softmax_ce(model, seqs, last, smoothing, mask_history=mask)
            got = all_positions_ce(model, seqs, targets, PAD, smoothing, mask_history=mask)
            torch.testing.assert_close(got, expected)


def test_each_position_masks_its_own_prefix_but_never_its_target() -> None:
    torch.manual_seed(0)
    model = build_model("sasrec", N_ITEMS, max_len=4).eval()
    seqs = torch.tensor([[PAD, 1, 2, 1], [5, 6, 7, 8]])
    targets = torch.tensor([[PAD, 2, 1, 9], [6, 5, 8, 20]])  # row 1, t=1: 5 is in the prefix
    states = model.encode_positions(seqs)  # [B, T, H]
    weight, _ = model.output_embeddings()
    logits, gold = [], []
    for b in range(2):
        for t in range(4):
            if targets[b, t] == PAD:
                continue
            row = states[b, t] @ weight.T  # [N]
            prefix = {int(i) for i in seqs[b, : t + 1] if i != PAD} - {int(targets[b, t])}
            hidden = torch.isin(torch.arange(N_ITEMS), torch.tensor(sorted(prefix)))
            row = row.masked_fill(hidden, float("-inf"))
            logits.append(row)
            gold.append(int(targets[b, t]))
    expected = F.cross_entropy(torch.stack(logits), torch.tensor(gold))
    torch.testing.assert_close(all_positions_ce(model, seqs, targets, PAD, mask_history=True), expected)
    plain = F.cross_entropy(states[targets != PAD] @ weight.T, targets[targets != PAD], label_smoothing=0.1)
    torch.testing.assert_close(all_positions_ce(model, seqs, targets, PAD, 0.1), plain)
    assert torch.isfinite(all_positions_ce(model, seqs, targets, PAD, 0.1, mask_history=True))


def test_all_position_training_runs_selects_on_validation_and_keeps_the_option(
    ml_dataset: Dataset, tmp_path: Path
) -> None:
    result = train(
        ml_dataset, "sasrec", models_dir=tmp_path, epochs=2, max_train_rows=1500, progress=False,
        config_overrides={"all_positions": True},
    )  # fmt: skip
    assert result.metrics["config"]["all_positions"] is True
    assert result.epoch_losses[-1] < result.epoch_losses[0]
    assert 0.0 <= result.metrics["val_hr1_expected"] <= 1.0


def test_models_without_position_states_have_no_all_positions_option() -> None:
    with pytest.raises(ValueError, match="all_positions"):
        build_model("gru4rec", N_ITEMS, all_positions=True)


def test_gbce_is_gsasrecs_bce_with_the_positive_probability_raised_to_beta() -> None:
    assert gbce_beta(256, 1001, 0.0) == pytest.approx(1.0)  # t = 0: plain BCE
    assert gbce_beta(256, 1001, 1.0) == pytest.approx(256 / 1000)  # t = 1: beta = alpha
    torch.manual_seed(0)
    model = build_model("sasrec", N_ITEMS, hidden=8, max_len=6).eval()  # no dropout: one forward each
    seqs = pad_histories([[1, 2, 3], [4, 5]], 6, PAD)
    targets = torch.tensor([6, 7])
    loss = gbce(model, seqs, targets, 5, 0.75, torch.Generator().manual_seed(3))
    # gSASRec's own form: BCE over [logit of sigma(pos)^beta, negatives], labels [1, 0 ...], mean.
    negatives = torch.randint(0, N_ITEMS, (2, 5), generator=torch.Generator().manual_seed(3))
    weight, _ = model.output_embeddings()
    states = model.encode(seqs)
    pos = (states * weight[targets]).sum(-1, keepdim=True).double()
    neg = torch.einsum("bh,bkh->bk", states, weight[negatives]).double()
    beta = gbce_beta(5, N_ITEMS, 0.75)
    # every logit shifted by the same constant (test below), then exactly gSASRec's loss
    pos, neg = pos + gbce_offset(5, beta), neg + gbce_offset(5, beta)
    pos_transformed = torch.log(1.0 / (torch.sigmoid(pos).pow(-beta) - 1.0))
    labels = torch.cat([torch.ones(2, 1), torch.zeros(2, 5)], dim=1).double()
    expected = F.binary_cross_entropy_with_logits(torch.cat([pos_transformed, neg], dim=1), labels)
    torch.testing.assert_close(loss.double(), expected)


@pytest.mark.parametrize(("k", "n_items", "t"), [(256, 1682, 0.75), (256, 1_000_000, 0.75), (4, 30, 0.0)])
def test_gbce_pulls_a_model_that_scores_every_item_alike_toward_no_shared_shift(
    k: int, n_items: int, t: float
) -> None:
    # BCE is not shift-invariant: unshifted, an untrained model (every logit equal) is pushed to
    # lower all its logits together, which tied embeddings do with a direction shared by every item
    # (SASRec on MovieLens then stayed at popularity). Equal logits must already be stationary.
    beta = gbce_beta(k, n_items, t)
    for level in (0.0, -2.0, 3.0):
        shift = torch.zeros((), requires_grad=True)
        pos, neg = torch.full((8,), level) + shift, torch.full((8, k), level) + shift
        loss = gbce_from_logits(pos, neg, beta)
        (grad,) = torch.autograd.grad(loss, shift)
        if level == 0.0:
            assert grad.item() == pytest.approx(0.0, abs=1e-7)
        else:  # above the balance point the loss lowers every logit, below it raises them
            assert (grad.item() > 0) == (level > 0), (level, grad.item())


def test_auto_trains_full_softmax_up_to_the_threshold_and_gbce_above() -> None:
    config = TrainConfig()
    assert config.loss_for(20_000) == "softmax" and config.loss_for(20_001) == "gbce"
    assert TrainConfig(loss="gbce").loss_for(10) == "gbce"
    with pytest.raises(ValueError, match="loss must be one of"):
        TrainConfig(loss="bpr")
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="device must be one of"):
        resolve_device("tpu")


def test_gbce_training_learns_beyond_popularity_on_a_synthetic_catalog(
    synthetic_dataset, tmp_path: Path
) -> None:
    from collections import Counter

    from recmodels.evaluation import expected_hr_at_1_of, full_ranking_stats, ranking_stats_from_scores

    result = train(
        synthetic_dataset, "sasrec", models_dir=tmp_path, epochs=10, progress=False, device="cpu",
        # t = 0 (beta = 1) and a high learning rate keep this test short (10 epochs on 400 items).
        config_overrides={"loss": "gbce", "negatives": 64, "lr": 5e-3, "gbce_t": 0.0, "patience": 10},
    )  # fmt: skip
    assert result.metrics["config"]["loss"] == "gbce"
    assert result.epoch_losses[-1] < result.epoch_losses[0]
    test_rows, _ = synthetic_dataset.eval_rows("test")
    from recmodels.artifacts import load_scorer

    model = load_scorer(result.artifact_path, synthetic_dataset).model
    learned = sum(expected_hr_at_1_of(full_ranking_stats(model, test_rows))) / len(test_rows)
    counts = Counter(r.next for r in synthetic_dataset.rows("train"))
    popularity = torch.tensor([[float(counts[i]) for i in range(synthetic_dataset.n_items)]] * len(test_rows))
    popular = sum(expected_hr_at_1_of(ranking_stats_from_scores(popularity, test_rows))) / len(test_rows)
    assert learned > max(popular, 1 / 20) + 0.05, (learned, popular)


@pytest.mark.parametrize("model_name", ["sasrec", "gru4rec", "caser"])
def test_shared_negatives_are_per_row_gbce_with_one_draw_for_every_row(model_name: str) -> None:
    torch.manual_seed(0)
    model = build_model(model_name, N_ITEMS, hidden=8, max_len=6).eval()
    seqs = pad_histories([[1, 2, 3], [4, 5], [9]], 6, PAD)
    targets = torch.tensor([6, 7, 8])
    shared = gbce(model, seqs, targets, 5, 0.75, torch.Generator().manual_seed(3), shared=True)
    negatives = torch.randint(0, N_ITEMS, (5,), generator=torch.Generator().manual_seed(3))
    weight, bias = model.output_embeddings()
    states = model.encode(seqs)
    pos = (states * weight[targets]).sum(-1)
    neg = states @ weight[negatives].T  # every row against the same five items
    if bias is not None:
        pos, neg = pos + bias[targets], neg + bias[negatives]
    torch.testing.assert_close(shared, gbce_from_logits(pos, neg, gbce_beta(5, N_ITEMS, 0.75)))


def _one_step_gradients(model_name: str, sparse: bool) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = build_model(model_name, N_ITEMS, hidden=8, max_len=6).eval()
    seqs, targets = pad_histories([[1, 2, 3], [4, 5]], 6, PAD), torch.tensor([6, 7])
    with sparse_item_gradients(model) if sparse else contextlib.nullcontext():
        gbce(model, seqs, targets, 5, 0.75, torch.Generator().manual_seed(3)).backward()
    return {name: p.grad.to_dense() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("model_name", ["sasrec", "gru4rec", "caser"])
def test_sparse_item_gradients_are_the_dense_gradients(model_name: str) -> None:
    dense, sparse = _one_step_gradients(model_name, False), _one_step_gradients(model_name, True)
    assert dense.keys() == sparse.keys()
    for name in dense:
        torch.testing.assert_close(sparse[name], dense[name], msg=name)
    model = build_model(model_name, N_ITEMS, hidden=8, max_len=6)
    assert all(not table.sparse for table in model.per_item_tables())  # restored after the block


def test_lazy_items_adamw_is_adamw_when_every_row_is_drawn_and_leaves_undrawn_rows_alone() -> None:
    torch.manual_seed(0)
    model = build_model("gru4rec", N_ITEMS, hidden=8, max_len=6)
    twin = copy.deepcopy(model)
    lazy = LazyItemsAdamW(model, lr=0.01, weight_decay=0.1)
    dense = torch.optim.AdamW(twin.parameters(), lr=0.01, weight_decay=0.1)
    every_row = torch.arange(N_ITEMS + 1)  # the padding row too: all rows get a gradient each step
    for step in range(3):
        for m, optimizer, sparse in ((model, lazy, True), (twin, dense, False)):
            optimizer.zero_grad()
            with sparse_item_gradients(m) if sparse else contextlib.nullcontext():
                rows, _ = m.sampled_item_rows(every_row)
                ((rows * (step + 1.0)).sin().sum() + m.project.weight.sum()).backward()
            optimizer.step()
    for (name, p), q in zip(model.named_parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(p, q, msg=name)

    before = model.item_emb.weight.detach().clone()
    lazy.zero_grad()
    with sparse_item_gradients(model):
        model.sampled_item_rows(torch.tensor([3, 4]))[0].sum().backward()
    lazy.step()
    changed = (model.item_emb.weight != before).any(dim=1).nonzero().flatten().tolist()
    assert changed == [3, 4]  # dense AdamW would also move every row along its momentum
