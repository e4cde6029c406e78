"""Seed ensembles and dataset presets: training, the format-2 artifact, scoring by averaged
log-softmax, backward-compatible loading of single models, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from cli import cli
from recmodels.artifacts import ArtifactError, artifact_path, load_scorer, read_artifact
from recmodels.dataset import Dataset
from recmodels.ensemble import SeedEnsemble
from recmodels.evaluation import evaluate_model
from recmodels.presets import PRESETS, preset_for, preset_overrides
from recmodels.registry import build_model
from recmodels.scorer import Scorer
from recmodels.training import train

HISTORIES = [[10, 20, 30], [1], [5, 6, 7, 8, 9, 11, 12, 13, 14, 15]]
CANDIDATES = [[40, 41, 42, 43], [2, 3, 4, 5], [100, 200, 300, 400]]


@pytest.fixture(scope="module")
def ensemble_path(ml_dataset: Dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-member GRU4Rec ensemble (1 epoch on 400 rows each: seconds)."""
    path = tmp_path_factory.mktemp("ens") / "gru4rec.pt"
    train(
        ml_dataset, "gru4rec", models_dir=path.parent, epochs=1, members=2, max_train_rows=400,
        progress=False, output_path=path,
    )  # fmt: skip
    return path


def test_ensemble_artifact_round_trip_gives_identical_scores(
    ensemble_path: Path, ml_dataset: Dataset
) -> None:
    first, second = load_scorer(ensemble_path, ml_dataset), load_scorer(ensemble_path, ml_dataset)
    assert isinstance(first.model, SeedEnsemble) and len(first.model) == 2
    assert first.info.extra["members"] == 2
    assert first.score_batch(HISTORIES, CANDIDATES) == second.score_batch(HISTORIES, CANDIDATES)
    assert first.top_k(HISTORIES[0], 10) == second.top_k(HISTORIES[0], 10)
    payload = read_artifact(ensemble_path)
    assert payload["format_version"] == 2 and "state_dict" not in payload and len(payload["state_dicts"]) == 2


def test_ensemble_score_is_the_mean_of_member_log_softmax(ensemble_path: Path) -> None:
    scorer = load_scorer(ensemble_path)
    members = scorer.model.members
    singles = [Scorer(m, scorer.info) for m in members]
    seqs = singles[0]._seqs(HISTORIES)
    cands = torch.as_tensor(CANDIDATES)
    expected = sum(torch.log_softmax(m.score_all(seqs), -1).gather(1, cands) for m in members) / 2
    got = torch.as_tensor(scorer.score_batch(HISTORIES, CANDIDATES))
    assert torch.allclose(got, expected.detach(), atol=1e-6)
    # The members differ (other seeds), so the ensemble is not one of them.
    assert singles[0].score_batch(HISTORIES, CANDIDATES) != singles[1].score_batch(HISTORIES, CANDIDATES)


def test_ensemble_metrics_are_what_evaluation_measures(ensemble_path: Path, ml_dataset: Dataset) -> None:
    scorer = load_scorer(ensemble_path, ml_dataset)
    metrics = scorer.info.extra["metrics"]
    assert metrics["members"] == 2 and [m["seed"] for m in metrics["member_metrics"]] == [0, 1]
    by_size = metrics["val_hr1_expected_by_size"]
    assert by_size == [metrics["member_metrics"][0]["val_hr1_expected"], metrics["val_hr1_expected"]]
    assert evaluate_model(scorer, ml_dataset, split="val")["hr1_expected"] == pytest.approx(
        metrics["val_hr1_expected"]
    )


def test_first_member_is_the_single_model_of_that_seed(
    ensemble_path: Path, ml_dataset: Dataset, tmp_path: Path
) -> None:
    single = tmp_path / "gru4rec.pt"
    train(
        ml_dataset,
        "gru4rec",
        models_dir=tmp_path,
        epochs=1,
        max_train_rows=400,
        progress=False,
        output_path=single,
    )
    payload = read_artifact(single)
    assert payload["format_version"] == 1 and "state_dicts" not in payload  # single models stay format 1
    member0 = read_artifact(ensemble_path)["state_dicts"][0]
    assert all(torch.equal(member0[k], v) for k, v in payload["state_dict"].items())


def test_single_model_artifacts_load_as_plain_models(
    ml_scorers: dict[str, Scorer], ml_models_dir: Path
) -> None:
    reloaded = load_scorer(artifact_path(ml_models_dir, "movielens", "sasrec"))
    assert not isinstance(reloaded.model, SeedEnsemble) and reloaded.info.extra["members"] == 1
    assert reloaded.score_batch(HISTORIES, CANDIDATES) == ml_scorers["sasrec"].score_batch(
        HISTORIES, CANDIDATES
    )


def test_ensemble_artifacts_need_two_state_dicts(ensemble_path: Path, tmp_path: Path) -> None:
    payload = read_artifact(ensemble_path)
    bad = tmp_path / "one.pt"
    torch.save({**payload, "state_dicts": payload["state_dicts"][:1]}, bad)
    with pytest.raises(ArtifactError, match="at least 2 state dicts"):
        load_scorer(bad)
    missing = {k: v for k, v in payload.items() if k != "state_dicts"}
    torch.save(missing, bad)
    with pytest.raises(ArtifactError, match="missing key"):
        load_scorer(bad)


def test_ensemble_embeddings_give_the_mean_member_cosine(ensemble_path: Path) -> None:
    model = load_scorer(ensemble_path).model
    weight, bias = model.output_embeddings()
    assert bias is None and weight.shape == (model.n_items, 2 * model.config.hidden)
    cos = weight[:5] @ weight[:5].T
    members = [torch.nn.functional.normalize(m.output_embeddings()[0][:5], dim=1) for m in model.members]
    assert torch.allclose(cos, sum(w @ w.T for w in members) / 2, atol=1e-5)


def test_ensembles_refuse_mixed_or_single_members(ml_dataset: Dataset) -> None:
    n = ml_dataset.n_items
    with pytest.raises(ValueError, match="at least 2"):
        SeedEnsemble([build_model("sasrec", n)])
    with pytest.raises(ValueError, match="share model class"):
        SeedEnsemble([build_model("sasrec", n), build_model("gru4rec", n)])


def test_presets_name_known_fields_and_apply_by_dataset_name() -> None:
    assert preset_overrides("movielens", "sasrec") == {"label_smoothing": 0.1}
    assert preset_overrides("movielens", "gru4rec") == {"dropout": 0.5, "epochs": 100, "patience": 15}
    assert preset_overrides("lastfm", "caser") == {"tie_weights": True, "weight_decay": 1.0}
    assert preset_overrides("movielens", "caser") == {"tie_weights": True}
    assert preset_overrides("mine", "sasrec") == {} and preset_for("steam", "caser") is None
    assert all(p.reason for p in PRESETS)


def _train(*extra: str) -> dict:
    args = ["train", "--dataset", "movielens", "--model", "gru4rec", "--epochs", "1"]
    result = CliRunner().invoke(cli, [*args, "--max-train-rows", "300", "--no-progress", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_cli_train_members_and_presets(cli_env: Path) -> None:
    summary = _train("--members", "2")
    assert summary["members"] == 2 and len(summary["member_metrics"]) == 2
    assert len(summary["val_hr1_expected_by_size"]) == 2
    config = read_artifact(Path(summary["artifact"]))["config"]
    assert config["dropout"] == 0.5  # the MovieLens GRU4Rec preset

    evaluated = CliRunner().invoke(
        cli, ["eval", "model", "--dataset", "movielens", "--model", "gru4rec", "--json"]
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert "gru4rec (ensemble of 2) on movielens" in evaluated.stdout
    assert json.loads(evaluated.stdout.strip().splitlines()[-1])["members"] == 2

    assert read_artifact(Path(_train("--set", "dropout=0.1")["artifact"]))["config"]["dropout"] == 0.1
    assert read_artifact(Path(_train("--no-preset")["artifact"]))["config"]["dropout"] == 0.3
