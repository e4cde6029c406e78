"""The paper's three datasets in the LLaRA protocol: their known counts and fingerprints, and fetching them.

`recloop data fetch movielens|lastfm|steam` obtains each the way a user can, and checks what it got
against the SHA-256 digests below (the LLaRA files as published, converted to JSON Lines, as in
LLaRA's and AFL's repositories). recloop ships none of these files: their licences (README, "Data and
models") allow research use but not redistribution.

- **movielens** is rebuilt from the GroupLens ratings (``lab/data/fetch.py``: GroupLens, else the
  RecBole wheel on PyPI), byte-identical to LLaRA's splits.
- **lastfm** and **steam**: LLaRA derived them from the HetRec 2011 Last.fm archive (GroupLens) and
  the UCSD Steam reviews by rules it did not publish, which recloop has not recovered; no package
  registry carries either (searched on PyPI: loaders such as DataRec, iRec or PyG download them from
  the same hosts at run time). So `fetch` takes LLaRA's files from a directory you have
  (``--from-dir``, or the download cache), verifies them and imports them; without one it tries the
  public archive, says what it tried and how to import a local copy.
"""

from __future__ import annotations

import shutil
import urllib.request
from collections.abc import Callable
from pathlib import Path

from app.settings import Settings
from lab.data.importer import import_llara
from lab.data.paper_files import PaperDataError, PaperDataset, mismatches, paper_dataset
from recmodels.dataset import Dataset, DatasetNotFound

DOWNLOAD_TIMEOUT_S = 10.0
Echo = Callable[[str], None]


def fetch_paper_dataset(
    settings: Settings,
    name: str,
    *,
    dataset_name: str | None = None,
    from_dir: Path | None = None,
    force: bool = False,
    echo: Echo,
) -> Dataset:
    """LastFM or Steam in the LLaRA protocol, verified: built once, then opened as it is."""
    spec = paper_dataset(name)
    target = dataset_name or name
    if not force and from_dir is None:
        try:
            return Dataset.open(settings.datasets_dir, target)
        except DatasetNotFound:
            pass
    cache = settings.data_dir / "downloads" / f"llara-{name}"
    source = Path(from_dir) if from_dir is not None else cache if cache.is_dir() else None
    if source is None:
        _try_public_archive(spec, settings.data_dir / "downloads", echo)  # raises: see its docstring
    assert source is not None
    wrong = mismatches(source, spec)
    if wrong:
        raise PaperDataError(
            f"{source} is not LLaRA's {name} data: " + "; ".join(wrong) + ". recloop verifies these files "
            f"against the known fingerprints; `recloop data import {source} --name {target}` imports "
            "other files unverified"
        )
    if from_dir is not None and source != cache:  # kept, so that a later fetch needs no directory
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(cache, ignore_errors=True)
        shutil.copytree(source, cache, ignore=lambda _, names: [n for n in names if n not in spec.files])
    echo(f"importing LLaRA's {name} files from {source} (verified: {len(spec.files)} files match)")
    return import_llara(cache if cache.is_dir() else source, settings.datasets_dir, target, force=force)


def _try_public_archive(spec: PaperDataset, downloads: Path, echo: Echo) -> None:
    """Try the public archive LLaRA's files were derived from, then stop with what to do.

    Reachable or not, recloop cannot turn that archive into LLaRA's split (the rule is unpublished):
    a reachable archive is kept under ``downloads`` for reference; the message says how to import a
    copy of LLaRA's files either way."""
    archive = downloads / Path(spec.public_url).name
    echo(f"trying {spec.public_url} ...")
    try:
        if not archive.is_file():
            with urllib.request.urlopen(spec.public_url, timeout=DOWNLOAD_TIMEOUT_S) as response:
                payload = response.read()
            downloads.mkdir(parents=True, exist_ok=True)
            archive.write_bytes(payload)
        tried = (
            f"downloaded {spec.public_url} to {archive}, but LLaRA's split cannot be rebuilt from it "
            "(its rule is unpublished)"
        )
    except OSError as exc:
        reason = getattr(exc, "reason", None) or exc
        tried = f"tried {spec.public_url} ({spec.public_source}): unreachable ({reason})"
    raise PaperDataError(
        f"could not fetch {spec.name}: {tried}. No package registry carries LLaRA's {spec.name} files. "
        f"To use a copy you have, put its {', '.join(spec.files)} in a directory DIR and run "
        f"`recloop data fetch {spec.name} --from-dir DIR` (verified against the known fingerprints), "
        f"or `recloop data import DIR --name {spec.name}`"
    )
