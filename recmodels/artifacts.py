"""Versioned model artifacts: one ``torch.save`` file per trained model.

The file holds only plain Python types and tensors so it loads with
``torch.load(..., weights_only=True)`` (no pickled code runs on load)::

    {format_version, model_name, config, n_items, dataset, dataset_fingerprint,
     state_dict, metrics, created_at, code_version}

Format 1 holds one model (``state_dict``). Format 2 holds a seed ensemble
(:class:`recmodels.ensemble.SeedEnsemble`): ``state_dicts``, one per member, all of the one
``config``. A single model is still written as format 1, so older readers keep loading it; both
formats load here.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from recmodels.base import SequentialRecommender
from recmodels.dataset import Dataset, sha256_file
from recmodels.ensemble import SeedEnsemble
from recmodels.registry import MODEL_NAMES, build_model, model_class, model_config
from recmodels.scorer import Scorer, ScorerInfo
from recmodels.text import cached_text_vectors, item_texts
from recmodels.train_config import TRAIN_FIELDS, TrainConfig

FORMAT_VERSION = 1  # one model
ENSEMBLE_FORMAT_VERSION = 2  # a seed ensemble: one state dict per member
_WEIGHTS_KEY = {FORMAT_VERSION: "state_dict", ENSEMBLE_FORMAT_VERSION: "state_dicts"}
_REQUIRED_KEYS = ("format_version", "model_name", "config", "n_items", "dataset", "dataset_fingerprint")


class ArtifactError(ValueError):
    """An artifact that is missing, unreadable, of another format, or for other data."""


def artifact_path(models_dir: Path, dataset: str, model_name: str) -> Path:
    """Default location of a dataset's model: ``models_dir/<dataset>/<model>.pt``."""
    return Path(models_dir) / dataset / f"{model_name}.pt"


def save_artifact(
    path: Path,
    model: SequentialRecommender,
    *,
    model_name: str,
    dataset: Dataset,
    metrics: dict[str, Any],
    train_config: TrainConfig | None = None,
) -> Path:
    """Write the artifact atomically (temp file + rename) so readers never see half a file.
    A :class:`SeedEnsemble` is written as format 2 (one state dict per member), a model as format 1."""
    weights: dict[str, Any]
    if isinstance(model, SeedEnsemble):
        weights = {
            "format_version": ENSEMBLE_FORMAT_VERSION,
            "state_dicts": [_plain_state(m) for m in model.members],
        }
    else:
        weights = {"format_version": FORMAT_VERSION, "state_dict": _plain_state(model)}
    payload = {
        "format_version": weights.pop("format_version"),
        "model_name": model_name,
        # The model's config and how it was trained, as one record (older artifacts have the same keys).
        "config": dataclasses.asdict(model_config(model))
        | (dataclasses.asdict(train_config) if train_config else {}),
        "n_items": model.n_items,
        "dataset": dataset.name,
        "dataset_fingerprint": dataset.fingerprint,
        **weights,
        "metrics": metrics,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "code_version": code_version(),
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def read_artifact(path: Path, *, sha256: str | None = None) -> dict[str, Any]:
    """The artifact's payload, checked for format version and required keys (``sha256``: the file's,
    if the caller has it already)."""
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"{path}: no such artifact")
    try:
        mapped = _mapped_copy(path, sha256 or sha256_file(path))
        payload = torch.load(mapped, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # no room or right to copy (a read-only volume), an older format: a private copy
        payload = _load_copied(path)  # (and the error of a corrupt or unsafe file)
    if not isinstance(payload, dict):
        raise ArtifactError(f"{path}: expected a dict payload, got {type(payload).__name__}")
    version = payload.get("format_version")
    if version not in _WEIGHTS_KEY:
        raise ArtifactError(
            f"{path}: format_version {version!r} is not one of the supported "
            f"{sorted(_WEIGHTS_KEY)}; retrain the model"
        )
    missing = [k for k in (*_REQUIRED_KEYS, _WEIGHTS_KEY[version]) if k not in payload]
    if missing:
        raise ArtifactError(f"{path}: missing key(s) {missing}")
    if payload["model_name"] not in MODEL_NAMES:
        raise ArtifactError(f"{path}: unknown model_name {payload['model_name']!r}")
    return payload


MAPPED_DIR = ".mapped"
"""Beside the artifacts: their copies named by content, which workers memory-map."""


def _mapped_copy(path: Path, digest: str) -> Path:
    """The artifact's copy named by its content (``.mapped/<stem>-<sha256>.pt``), made if missing.

    Memory-mapped weights are read from the page cache: one copy shared by every worker on the
    machine instead of a private copy each. But a mapped file must never change in place: a model
    retrained into the same file (or copied over it) would crash every worker that maps it (SIGBUS
    on a truncated page) or change its weights under it. A copy named by its content is never
    written again. The artifact's older copies are unlinked when a new one is made (a worker that
    still maps one keeps it until it lets go: unlinking never truncates)."""
    mapped = path.parent / MAPPED_DIR / f"{path.stem}-{digest}.pt"
    if mapped.is_file():
        return mapped
    mapped.parent.mkdir(exist_ok=True)
    partial = mapped.with_name(f".{mapped.name}.{os.getpid()}.partial")
    shutil.copyfile(path, partial)
    copied = mapped.with_name(f"{path.stem}-{sha256_file(partial)}.pt")  # had it changed meanwhile
    for older in mapped.parent.glob(f"{path.stem}-*.pt"):
        if older != copied:
            older.unlink(missing_ok=True)
    os.replace(partial, copied)
    return copied


def _load_copied(path: Path) -> Any:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt or unsafe files
        raise ArtifactError(f"{path}: not a loadable recloop artifact ({exc})") from exc


def load_scorer(path: Path, dataset: Dataset | None = None) -> Scorer:
    """Rebuild the model from its config and weights. With ``dataset``, refuse an artifact trained
    on different data (fingerprint or catalog size differ)."""
    path = Path(path)
    digest = sha256_file(path)  # hashed once: the mapped copy is named by it, the scorer reports it
    payload = read_artifact(path, sha256=digest)
    new_items = _check_same_data(path, payload, dataset) if dataset is not None else 0
    if payload["format_version"] == FORMAT_VERSION:
        members = [_rebuild(path, payload, payload["state_dict"])]
    else:
        states = payload["state_dicts"]
        if not isinstance(states, list) or len(states) < 2:
            raise ArtifactError(f"{path}: an ensemble artifact needs a list of at least 2 state dicts")
        members = [_rebuild(path, payload, state) for state in states]
    if new_items:
        assert dataset is not None
        members = _grown(members, dataset, new_items)
    model: SequentialRecommender = members[0] if len(members) == 1 else SeedEnsemble(members)
    info = ScorerInfo(
        model_name=payload["model_name"],
        dataset=payload["dataset"],
        dataset_fingerprint=payload["dataset_fingerprint"],
        n_items=model.n_items,
        artifact_sha256=digest,
        extra={
            "path": str(path),
            "members": len(model) if isinstance(model, SeedEnsemble) else 1,
            "created_at": payload.get("created_at"),
            "code_version": payload.get("code_version"),
            "metrics": payload.get("metrics", {}),
            **({"new_items": new_items} if new_items else {}),
        },
    )
    return Scorer(model, info)


def _grown(
    members: list[SequentialRecommender], dataset: Dataset, new_items: int
) -> list[SequentialRecommender]:
    """The members over the grown catalog: the last ``new_items`` items scored from their text."""
    texts = item_texts(dataset.items[dataset.n_items - new_items :])
    vectors = torch.from_numpy(cached_text_vectors(texts, cache_path=None))  # [k, D]: a handful, no cache
    return [m.with_new_items(vectors) for m in members]  # type: ignore[attr-defined]


def _plain_state(model: SequentialRecommender) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def _rebuild(path: Path, payload: dict[str, Any], state: dict[str, torch.Tensor]) -> SequentialRecommender:
    """One model from the artifact's config and one state dict."""
    config = {k: v for k, v in payload["config"].items() if k not in TRAIN_FIELDS}  # the model's part
    model = build_model(payload["model_name"], int(payload["n_items"]), **config)
    try:
        model.load_state_dict(state, assign=True)  # the mapped tensors themselves, not copies
    except RuntimeError as exc:
        raise ArtifactError(f"{path}: weights do not fit the model config ({exc})") from exc
    return model


def load_latest_scorer(models_dir: Path, dataset: str | Dataset, model_name: str) -> Scorer:
    """The model at the default location; pass a :class:`Dataset` to also check the fingerprint."""
    name = dataset.name if isinstance(dataset, Dataset) else dataset
    path = artifact_path(models_dir, name, model_name)
    if not path.is_file():
        raise ArtifactError(
            f"no {model_name} model for dataset {name!r} at {path}; "
            f"train it with `recloop train --dataset {name} --model {model_name}`"
        )
    return load_scorer(path, dataset if isinstance(dataset, Dataset) else None)


def code_version() -> str:
    """``git describe --always --dirty --tags`` of the checkout (``-dirty``: uncommitted changes),
    else the installed package version: the provenance of artifacts and evaluation runs."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        if described:
            return described
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return f"recloop {metadata.version('recloop')}"
    except metadata.PackageNotFoundError:
        return "unknown"


def _check_same_data(path: Path, payload: dict[str, Any], dataset: Dataset) -> int:
    """0 if the artifact was trained on ``dataset``; the number of items added to the catalog since
    (``recloop data add-items``) if the model can score them from their text; else an error."""
    trained = (payload["dataset_fingerprint"], int(payload["n_items"]))
    if trained == (dataset.fingerprint, dataset.n_items):
        return 0
    base = (dataset.meta.get("base_fingerprint"), dataset.meta.get("base_n_items"))
    grows = getattr(model_class(payload["model_name"]), "needs_item_text", False)
    if trained == base and grows:
        return dataset.n_items - trained[1]
    hint = " (an id-only model cannot score the items added since; textrec can)" if trained == base else ""
    raise ArtifactError(
        f"{path}: trained on dataset {payload['dataset']!r} "
        f"(fingerprint {payload['dataset_fingerprint'][:12]}, {payload['n_items']} items), "
        f"not on {dataset.name!r} (fingerprint {dataset.fingerprint[:12]}, {dataset.n_items} items){hint}; "
        f"retrain with `recloop train --dataset {dataset.name} --model {payload['model_name']}`"
    )
