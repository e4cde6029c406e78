"""What the offline agents learn: fitted on the validation split only, deterministic, cached next to
the models and refitted when they change; a worker only reads it, and refuses to start without it."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
import torch

from app.services.runtime import load_loop_deps
from app.settings import Settings
from graph.caches import LoopCaches
from graph.calibration import CalibrationMissing, LoopCalibration, calibration_path
from lab import prepare
from lab.calibration import offline as cal_module
from lab.calibration.offline import TRUST_GRID, ensure_loop_calibration, fit_calibration, fit_trust
from recmodels.artifacts import load_scorer, read_artifact
from recmodels.dataset import Dataset


@pytest.fixture
def fit_settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path / "data")


async def test_calibration_reads_only_the_validation_split(
    ml_dataset, ml_scorers, fit_settings, monkeypatch
) -> None:
    read: list[str] = []
    original = Dataset.iter_rows

    def spy(self, split):
        read.append(split)
        return original(self, split)

    monkeypatch.setattr(Dataset, "iter_rows", spy)
    fitted = await fit_calibration(
        fit_settings, ml_dataset, ml_scorers["gru4rec"], ml_scorers["sasrec"], ("collaborative",)
    )
    assert read and set(read) == {"val"}
    assert fitted.learned and fitted.provenance["split"] == "val"
    assert fitted.provenance["n_rows"] == len(ml_dataset.eval_rows("val")[0])
    assert 0.0 <= fitted.trust <= 1.0 and fitted.rec_temperature > 0 and fitted.reward_temperature > 0
    assert fitted.verdict_threshold is not None and fitted.user_similarity in ("none", "collaborative")
    # every trust value tried is reported with its validation score, and the chosen one is the best
    curve = fitted.provenance["val_expected_hr1_by_trust"]
    assert len(curve) == len(TRUST_GRID) and curve[f"{fitted.trust:.2f}"] == max(curve.values())


async def test_calibration_is_deterministic(ml_dataset, ml_scorers, fit_settings) -> None:
    args = (fit_settings, ml_dataset, ml_scorers["caser"], ml_scorers["sasrec"], ("collaborative",))
    assert await fit_calibration(*args) == await fit_calibration(*args)


def test_trust_follows_the_better_model_and_is_central_when_they_agree(ml_dataset) -> None:
    rows, _ = ml_dataset.eval_rows("val")
    n = ml_dataset.n_items
    informed = torch.full((len(rows), n), -10.0)
    for b, row in enumerate(rows):
        informed[b, row.next] = 0.0  # knows every answer
    noise = torch.randn(len(rows), n, generator=torch.Generator().manual_seed(0))
    follow, curve = fit_trust(noise, informed, rows)  # the feedback's model is right: follow it
    assert follow > 0.5 and curve["1.00"] == max(curve.values()) > curve["0.00"]
    stand, curve = fit_trust(informed, noise, rows)  # the prior is right: it stands
    assert stand < 0.5 and curve["0.00"] == max(curve.values()) > curve["1.00"]
    assert fit_trust(noise, noise, rows)[0] == 0.5  # the same model twice: a flat curve, its middle


async def test_calibration_is_cached_beside_the_artifact_and_refitted_when_models_change(
    ml_dataset, ml_models_dir: Path, fit_settings, tmp_path: Path, monkeypatch
) -> None:
    models = tmp_path / "models" / "movielens"
    models.mkdir(parents=True)
    for name in ("gru4rec", "sasrec", "caser"):
        shutil.copy(ml_models_dir / "movielens" / f"{name}.pt", models / f"{name}.pt")
    rec = load_scorer(models / "gru4rec.pt", ml_dataset)
    reward = load_scorer(models / "sasrec.pt", ml_dataset)
    fits: list[str] = []
    real_fit = cal_module.fit_calibration

    async def counted(*args, **kwargs):
        fits.append(args[2].info.model_name)
        return await real_fit(*args, **kwargs)

    monkeypatch.setattr(cal_module, "fit_calibration", counted)
    caches = LoopCaches()
    first = await ensure_loop_calibration(
        fit_settings.loop_config(), ml_dataset, rec, reward, ("collaborative",), caches
    )
    assert list(caches.calibrations.values()) == [first]
    assert (  # the caller's caches answer again without a fit or a read
        await ensure_loop_calibration(
            fit_settings.loop_config(), ml_dataset, rec, reward, ("collaborative",), caches
        )
        is first
    )
    path = calibration_path(rec, reward)
    assert path == models / "calibration" / "gru4rec+sasrec.json" and path.is_file()
    stored = json.loads(path.read_text())
    assert stored["key"]["rec_sha256"] == rec.info.artifact_sha256
    assert stored["key"]["dataset_fingerprint"] == ml_dataset.fingerprint
    assert LoopCalibration.from_json(stored["calibration"]) == first

    # without those caches (a new process): read from the file, no refit
    assert (
        await ensure_loop_calibration(fit_settings.loop_config(), ml_dataset, rec, reward, ("collaborative",))
        == first
    )
    assert fits == ["gru4rec"]

    # The rec model retrained into the same file: its hash differs, so it is refitted.
    payload = read_artifact(models / "gru4rec.pt")
    torch.save({**payload, "created_at": "retrained"}, models / "gru4rec.pt")
    retrained = load_scorer(models / "gru4rec.pt", ml_dataset)
    assert retrained.info.artifact_sha256 != rec.info.artifact_sha256
    await ensure_loop_calibration(
        fit_settings.loop_config(), ml_dataset, retrained, reward, ("collaborative",)
    )
    assert fits == ["gru4rec", "gru4rec"]
    assert json.loads(path.read_text())["key"]["rec_sha256"] == retrained.info.artifact_sha256


def test_models_built_in_memory_are_never_written(ml_dataset, ml_scorers) -> None:
    from recmodels.scorer import Scorer, ScorerInfo

    base = ml_scorers["sasrec"]
    anonymous = Scorer(base.model, ScorerInfo("sasrec", "movielens", ml_dataset.fingerprint, base.n_items))
    assert calibration_path(anonymous, anonymous) is None


async def test_no_validation_split_means_uncalibrated_defaults(
    ml_scorers, ml_dataset, fit_settings, tmp_path
) -> None:
    empty = tmp_path / "ds"
    shutil.copytree(ml_dataset.root, empty)
    (empty / "val.jsonl").write_text("")
    fitted = await fit_calibration(
        fit_settings, Dataset(empty), ml_scorers["sasrec"], ml_scorers["sasrec"], ()
    )
    assert fitted == LoopCalibration() and not fitted.learned


def test_memory_weights_count_only_beyond_validation_noise() -> None:
    from lab.calibration.offline import _memory_gain, _Pooled

    generator = torch.Generator().manual_seed(1)
    n_users, per_user = 60, 10
    users = torch.arange(n_users).repeat_interleave(per_user)
    labels = torch.rand(n_users * per_user, generator=generator) < 0.5
    log_probs = torch.randn(n_users * per_user, generator=generator, dtype=torch.float64)
    zeros = torch.zeros_like(log_probs)

    def pooled(liked: torch.Tensor) -> _Pooled:
        return _Pooled(log_probs, zeros, liked, zeros, labels, users)

    telling = pooled(labels.double() * 4 - 2)  # similarity to liked items marks the positives
    mean, low, _high = _memory_gain([telling], 0.0, 0.0, (1.0, 0.0), n_users)
    assert mean > 0 and low > 0
    noise = pooled(torch.randn(n_users * per_user, generator=generator, dtype=torch.float64))
    _mean, low, high = _memory_gain([noise], 0.0, 0.0, (1.0, 0.0), n_users)
    assert low < 0 < high


def test_a_worker_without_a_calibration_refuses_to_start_and_never_fits(
    ml_dataset, ml_models_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    settings = Settings(
        _env_file=None, data_dir=tmp_path / "data", rec_model="gru4rec", reward_model="sasrec"
    )
    models = settings.models_dir / "movielens"
    models.mkdir(parents=True)
    for name in ("gru4rec", "sasrec"):
        shutil.copy(ml_models_dir / "movielens" / f"{name}.pt", models / f"{name}.pt")

    async def no_fit(*args, **kwargs):
        raise AssertionError("a worker fitted the calibration")

    monkeypatch.setattr(cal_module, "fit_calibration", no_fit)
    with pytest.raises(CalibrationMissing) as missing:
        asyncio.run(load_loop_deps(settings, ml_dataset))
    message = str(missing.value)
    assert "gru4rec+sasrec on movielens is missing" in message
    assert "run `recloop prepare`" in message
    assert "`recloop calibrate --dataset movielens --agents offline`" in message
    assert not (models / "calibration").exists()  # nothing written

    # What `recloop prepare` (and `recloop serve`, before any worker starts) does: fit it once.
    monkeypatch.undo()
    echoed: list[str] = []
    prepare.ensure_calibration(settings, ml_dataset, echoed.append)
    assert echoed == ["calibration of the offline agents for gru4rec+sasrec ..."]
    saved = models / "calibration" / "gru4rec+sasrec.json"
    stored = LoopCalibration.from_json(json.loads(saved.read_text())["calibration"])
    monkeypatch.setattr(cal_module, "fit_calibration", no_fit)
    deps = asyncio.run(load_loop_deps(settings, ml_dataset))
    assert deps["offline"].calibration == stored and stored.learned
