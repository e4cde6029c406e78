"""Artifacts: round trip, safe loading, refusal of other data, and the CLI contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from cli import cli
from recmodels.artifacts import ArtifactError, artifact_path, load_latest_scorer, load_scorer, read_artifact
from recmodels.dataset import Dataset
from recmodels.names import ID_MODEL_NAMES
from recmodels.scorer import Scorer

HISTORIES = [[10, 20, 30], [1], [5, 6, 7, 8, 9, 11, 12, 13, 14, 15]]
CANDIDATES = [[40, 41, 42, 43], [2, 3, 4, 5], [100, 200, 300, 400]]


class _Unsafe:
    """Not a plain type: torch.load(weights_only=True) must refuse to unpickle it."""


def _dataset_with_fingerprint(src: Dataset, root: Path, fingerprint: str) -> Dataset:
    root.mkdir()
    for path in src.root.iterdir():
        if path.name != "meta.json":
            (root / path.name).symlink_to(path)
    meta = {**src.meta, "fingerprint": fingerprint}
    (root / "meta.json").write_text(json.dumps(meta))
    return Dataset(root)


@pytest.mark.parametrize("name", ID_MODEL_NAMES)
def test_save_then_load_gives_identical_scores(
    name: str, ml_scorers: dict[str, Scorer], ml_models_dir: Path
) -> None:
    original = ml_scorers[name]
    reloaded = load_scorer(artifact_path(ml_models_dir, "movielens", name))
    assert reloaded.score_batch(HISTORIES, CANDIDATES) == original.score_batch(HISTORIES, CANDIDATES)
    assert reloaded.top_k(HISTORIES[0], 10) == original.top_k(HISTORIES[0], 10)
    assert reloaded.info.artifact_sha256 == original.info.artifact_sha256
    assert len(reloaded.info.artifact_sha256) == 64 and reloaded.info.model_name == name


def test_artifact_holds_the_versioned_fields(ml_models_dir: Path, ml_dataset: Dataset) -> None:
    payload = read_artifact(artifact_path(ml_models_dir, "movielens", "sasrec"))
    assert payload["format_version"] == 1 and payload["model_name"] == "sasrec"
    assert payload["n_items"] == ml_dataset.n_items and payload["dataset"] == "movielens"
    assert payload["dataset_fingerprint"] == ml_dataset.fingerprint
    assert payload["config"]["hidden"] == 64 and payload["created_at"] and payload["code_version"]
    assert "val_hr1_expected" in payload["metrics"]


def test_loading_refuses_pickled_objects(ml_models_dir: Path, tmp_path: Path) -> None:
    payload = read_artifact(artifact_path(ml_models_dir, "movielens", "caser"))
    bad = tmp_path / "caser.pt"
    torch.save({**payload, "metrics": {"note": _Unsafe()}}, bad)
    with pytest.raises(ArtifactError, match="not a loadable recloop artifact"):
        load_scorer(bad)


def test_loading_refuses_another_format_version(ml_models_dir: Path, tmp_path: Path) -> None:
    payload = read_artifact(artifact_path(ml_models_dir, "movielens", "caser"))
    old = tmp_path / "caser.pt"
    torch.save({**payload, "format_version": 0}, old)
    with pytest.raises(ArtifactError, match=r"format_version 0 is not one of the supported \[1, 2\]"):
        load_scorer(old)


def test_loading_refuses_a_different_dataset_fingerprint(
    ml_models_dir: Path, ml_dataset: Dataset, tmp_path: Path
) -> None:
    other = _dataset_with_fingerprint(ml_dataset, tmp_path / "movielens", "0" * 64)
    fix = "retrain with `recloop train --dataset movielens --model gru4rec`"
    with pytest.raises(ArtifactError, match=fix):
        load_latest_scorer(ml_models_dir, other, "gru4rec")
    assert load_latest_scorer(ml_models_dir, ml_dataset, "gru4rec").info.dataset_fingerprint == (
        ml_dataset.fingerprint
    )


def test_a_missing_model_says_how_to_train_it(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="train it with `recloop train --dataset lastfm --model caser`"):
        load_latest_scorer(tmp_path, "lastfm", "caser")


def _last_json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_cli_train_then_eval_model_print_json_last(cli_env: Path) -> None:
    runner = CliRunner()
    trained = runner.invoke(
        cli,
        ["train", "--dataset", "movielens", "--model", "caser", "--epochs", "1"]
        + ["--max-train-rows", "400", "--no-progress", "--set", "dropout=0.1", "--json"],
    )
    assert trained.exit_code == 0, trained.output
    summary = _last_json(trained.stdout)
    assert summary["model"] == "caser" and summary["train_rows"] == 400 and summary["epochs_run"] == 1
    assert Path(summary["artifact"]) == artifact_path(cli_env / "models", "movielens", "caser")
    assert read_artifact(Path(summary["artifact"]))["config"]["dropout"] == 0.1

    evaluated = runner.invoke(cli, ["eval", "model", "--dataset", "movielens", "--model", "caser", "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    assert "HR@1 of 20" in evaluated.stdout
    result = _last_json(evaluated.stdout)
    assert {"hr1_mean", "hr1_std", "hit10", "ndcg10", "n_rows"} <= set(result)
    assert result["n_rows"] == 95 and result["split"] == "test"
    # The run directory: the numbers, a report with the paper's beside them, the interval plot.
    run = Path(result["run_dir"])
    assert run.parent == cli_env / "runs" and run.name.startswith("model-movielens-")
    stored = json.loads((run / "results.json").read_text())
    assert stored["experiment"] == stored["config"]["experiment"] == "model"  # how /v1/runs lists it
    assert stored["results"]["caser"]["hr1_expected"] == result["hr1_expected"]
    report = (run / "report.md").read_text()
    low, high = result["hr1_expected_ci95"]
    assert f"| caser | 95 | {result['hr1_expected']:.4f} [{low:.4f}, {high:.4f}] |" in report
    assert report.count("0.3789") == 1  # the paper's Caser on MovieLens (Table 4, model column)
    assert "llara 0.4842" in report
    assert (run / "hr1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_eval_model_without_an_artifact_fails_with_the_fix(cli_env: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "model", "--dataset", "movielens", "--model", "sasrec"])
    assert result.exit_code == 1
    assert "recloop train --dataset movielens --model sasrec" in result.output


def test_cli_train_rejects_unknown_config_keys(cli_env: Path) -> None:
    result = CliRunner().invoke(
        cli, ["train", "--dataset", "movielens", "--model", "sasrec", "--set", "hiden=3", "--no-progress"]
    )
    assert result.exit_code == 2 and "hiden=3" in result.output


def test_weights_are_mapped_from_a_copy_so_a_model_retrained_into_its_file_never_breaks_a_worker(tmp_path):
    """Workers memory-map a copy named by content (shared pages): a new model written over the
    artifact in place (torch.save to the same path, or a copy over it) neither crashes nor changes
    a model that is loaded; the next load reads the new weights, and the old copy is unlinked."""
    import types

    from recmodels.artifacts import MAPPED_DIR, save_artifact
    from recmodels.registry import build_model

    data = types.SimpleNamespace(name="tiny", fingerprint="0" * 64)
    path = tmp_path / "sasrec.pt"
    torch.manual_seed(0)
    save_artifact(path, build_model("sasrec", 500), model_name="sasrec", dataset=data, metrics={})
    served = load_scorer(path)
    before = served.score([1, 2, 3], [4, 5, 6])
    torch.manual_seed(1)
    retrained = build_model("sasrec", 500)
    payload = read_artifact(path)
    torch.save({**payload, "state_dict": retrained.state_dict()}, path)  # in place, not by rename
    assert served.score([1, 2, 3], [4, 5, 6]) == before  # still mapped, unchanged
    fresh = load_scorer(path)
    assert fresh.score([1, 2, 3], [4, 5, 6]) != before
    copies = sorted(p.name for p in (tmp_path / MAPPED_DIR).glob("*.pt"))
    assert copies == [f"sasrec-{fresh.info.artifact_sha256}.pt"]
