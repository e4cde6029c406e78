"""`recloop prepare`: everything a worker reads from ``data_dir``, fitted once, before any worker starts.

The dataset (fetched and built if absent), the rec and reward models (trained if absent) and the
offline agents' calibration. `recloop prepare` (a one-shot job) and `recloop serve` (on a fresh
machine) share it; a worker only reads what this wrote (:func:`app.services.bootstrap.check_prepared`
checks it is there).
"""

from __future__ import annotations

import asyncio

from app.services.bootstrap import Echo
from app.settings import Settings
from recmodels.dataset import Dataset, DatasetNotFound


def ensure_dataset(settings: Settings, echo: Echo) -> Dataset:
    try:
        return Dataset.open(settings.datasets_dir, settings.dataset)
    except DatasetNotFound:
        if settings.dataset != "movielens":
            raise
    from lab.data.fetch import fetch_movielens

    echo("MovieLens-100k is not here yet: fetching and building it ...")
    return fetch_movielens(settings, settings.dataset)


def ensure_models(settings: Settings, dataset: Dataset, echo: Echo) -> None:
    """Train the default rec and reward models unless their artifacts exist (with progress bars)."""
    import torch

    from recmodels.artifacts import artifact_path
    from recmodels.training import train

    # As `recloop train` does: two spinning intra-op threads made the first start's training ~50x
    # slower next to one other busy process (1.5 s per step instead of 0.03 s).
    torch.set_num_threads(settings.torch_threads)
    for model_name in dict.fromkeys((settings.rec_model, settings.reward_model)):
        path = artifact_path(settings.models_dir, dataset.name, model_name)
        if path.is_file():
            continue
        echo(f"training {model_name} on {dataset.name} (first start only) ...")
        result = train(dataset, model_name, models_dir=settings.models_dir, progress=True)
        echo(f"  saved {result.artifact_path}")


def ensure_calibration(settings: Settings, dataset: Dataset, echo: Echo) -> None:
    """Fit the offline agents' calibration for the configured models unless it is saved beside them.

    Loading the loop's dependencies reads the saved file or fits it on validation (seconds) and
    writes it, exactly as a worker would on its first loop; doing it here lets the workers start
    from a read-only models volume."""
    from app.services.runtime import load_loop_deps

    echo(f"calibration of the offline agents for {settings.rec_model}+{settings.reward_model} ...")
    asyncio.run(load_loop_deps(settings, dataset))


def prepare_artifacts(settings: Settings, echo: Echo, *, calibrate: bool = True) -> Dataset:
    """Data, models and the loop calibration: everything a worker reads from ``data_dir``, made once.

    `recloop prepare` (a one-shot job) and `recloop serve` (on a fresh machine) share it; both are
    idempotent: a second run finds the files and only loads the models to check the calibration.
    `serve` passes ``calibrate=False``: its worker reads or fits the calibration on its own."""
    dataset = ensure_dataset(settings, echo)
    ensure_models(settings, dataset, echo)
    if calibrate:
        ensure_calibration(settings, dataset, echo)
    return dataset
