"""`recloop prepare`: everything a worker reads from ``data_dir``, fitted once, before any worker starts.

The dataset (fetched and built if absent), the rec and reward models (trained if absent), the
item text vectors and the catalog look-up steering reads, and the offline agents' calibration.
`recloop prepare` (a one-shot job) and `recloop serve` (on a fresh machine) share it; a worker
only reads what this wrote (:func:`app.services.bootstrap.check_prepared` checks it is there).
"""

from __future__ import annotations

import asyncio

import torch

from app.services.bootstrap import Echo
from app.services.runtime import load_scorers
from app.settings import Settings
from graph.item_vectors import available_backends
from lab.calibration.offline import ensure_loop_calibration
from lab.data.fetch import fetch_movielens
from recmodels.artifacts import artifact_path
from recmodels.dataset import Dataset, DatasetNotFound
from recmodels.text import TEXT_VECTORS_MAX_ITEMS, embedding_cache_path, prepared_text_vectors, text_available
from recmodels.training import train
from steering.lookup import build_lookup, load_lookup, lookup_dir, save_lookup
from steering.similarity import text_item_vectors


def ensure_dataset(settings: Settings, echo: Echo) -> Dataset:
    try:
        return Dataset.open(settings.datasets_dir, settings.dataset)
    except DatasetNotFound:
        if settings.dataset != "movielens":
            raise
    echo("MovieLens-100k is not here yet: fetching and building it ...")
    return fetch_movielens(settings, settings.dataset)


def ensure_models(settings: Settings, dataset: Dataset, echo: Echo) -> None:
    """Train the default rec and reward models unless their artifacts exist (with progress bars)."""
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
    """Fit the offline agents' calibration for the configured models unless it is saved beside them
    (on validation: seconds on MovieLens, minutes on a large catalog). A worker only reads it."""
    rec, reward = load_scorers(settings, dataset)
    echo(f"calibration of the offline agents for {settings.rec_model}+{settings.reward_model} ...")
    asyncio.run(
        ensure_loop_calibration(settings.loop_config(), dataset, rec, reward, available_backends(dataset))
    )


def ensure_text_vectors(settings: Settings, dataset: Dataset, echo: Echo) -> None:
    """The MiniLM item vectors steering's soft preferences read (RECLOOP_STEERING_SIMILARITY ``auto``
    or ``text``), made here once unless saved: a worker only maps the file and never encodes a
    catalog. ``auto`` above TEXT_VECTORS_MAX_ITEMS items makes none (minutes to hours of MiniLM;
    steering then uses the rec model's item embeddings); ``text`` asks for them at any size."""
    backend = settings.steering_similarity
    if backend == "collaborative" or not text_available():
        return
    if backend == "auto" and dataset.n_items > TEXT_VECTORS_MAX_ITEMS:
        echo(
            f"steering similarity: collaborative ({dataset.n_items:,} items is above "
            f"{TEXT_VECTORS_MAX_ITEMS:,} for MiniLM text vectors; "
            "RECLOOP_STEERING_SIMILARITY=text makes them)"
        )
        return
    path = embedding_cache_path(settings.data_dir, dataset.name, dataset.fingerprint)
    if prepared_text_vectors(path, dataset.n_items) is None:
        echo(f"text vectors of {dataset.n_items:,} items for steering (MiniLM, ~110 items/s on a CPU) ...")
    text_item_vectors(dataset, cache_path=path)  # a saved file is read, not recomputed


def ensure_steering_lookup(settings: Settings, dataset: Dataset, echo: Echo) -> None:
    """The catalog's steering look-up (steering/lookup.py) unless a current one is saved: a worker
    then maps it instead of building it from every item at start-up."""
    where = lookup_dir(settings.data_dir, dataset.name)
    if load_lookup(where, dataset.fingerprint) is not None:
        return
    echo(f"steering look-up of {dataset.n_items:,} items ...")
    save_lookup(build_lookup(dataset), where, dataset.fingerprint)


def prepare_artifacts(settings: Settings, echo: Echo) -> Dataset:
    """Data, models and the loop calibration: everything a worker reads from ``data_dir``, made once.

    `recloop prepare` (a one-shot job) and `recloop serve` (on a fresh machine, before any worker
    starts) share it; both are idempotent: a second run finds the files and only loads the models
    to check the calibration's key."""
    dataset = ensure_dataset(settings, echo)
    ensure_models(settings, dataset, echo)
    ensure_text_vectors(settings, dataset, echo)
    ensure_steering_lookup(settings, dataset, echo)
    ensure_calibration(settings, dataset, echo)
    return dataset
