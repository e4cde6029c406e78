"""The paper's three datasets in the LLaRA protocol: known counts, SHA-256 fingerprints, sources, licences.

The digests are those of the LLaRA files as published (LLaRA's and AFL's repositories), converted
once to JSON Lines / CSV; a copy that matches them is the paper's data byte for byte. recloop ships
none of these files: their licences allow research use, not redistribution (README, "Data and models").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from recmodels.dataset import sha256_file


class PaperDataError(RuntimeError):
    """A paper dataset could not be obtained, or its files are not the known ones."""


@dataclass(frozen=True)
class PaperDataset:
    name: str
    items: int
    rows: dict[str, int]  # split -> rows in the LLaRA files
    digests: dict[str, str]  # LLaRA file name -> SHA-256
    public_source: str  # where LLaRA's files come from upstream
    public_url: str  # what `fetch` tries to download
    licence: str
    notes: tuple[str, ...] = field(default=())

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(self.digests)


PAPER_DATASETS: dict[str, PaperDataset] = {
    "movielens": PaperDataset(
        name="movielens",
        items=1682,
        rows={"train": 68_388, "val": 94, "test": 95},
        digests={
            "items.csv": "5f8b02798f2882757d8f27b3f57710b8d85491b66a29dc2c7bb9c1108c5134c8",
            "train.jsonl": "39ccedfde04085d106bf760807a0080dd3120da3e981f3277e84de89b45ef90d",
            "val.jsonl": "02a2100bb58522b5609265ce3f2784efb08d7f455807abbf404bdcd49d0f97c9",
            "test.jsonl": "5be71039891ce812063515cdd888f9434a7dee920d45582c2882542bf0f9ae59",
        },
        public_source="MovieLens-100k (GroupLens)",
        public_url="https://files.grouplens.org/datasets/movielens/ml-100k.zip",
        licence="GroupLens terms: research use, no commercial use, cite Harper & Konstan (2015); "
        "not to be redistributed without permission",
    ),
    "lastfm": PaperDataset(
        name="lastfm",
        items=4606,
        rows={"train": 50_800, "val": 122, "test": 122},
        digests={
            "items.csv": "41abd497dae7b402cb93a42ad9ec68ae24c79727bc7716a8d20845221d31514d",
            "train.jsonl": "35060478186307a022f64ad24675118ea6b20dd18c3a39345f443df7c4de7634",
            "val.jsonl": "5ed10f1c9bbdf00561f4c943106037ecb23978f539add3a0371527570cce60f1",
            "test.jsonl": "6f1674a7750e2948fa31863a818a684c265dfd11e67e956dfcf6c881889d3ccf",
        },
        public_source="Last.fm hetrec2011-lastfm-2k (HetRec 2011, GroupLens)",
        public_url="https://files.grouplens.org/datasets/hetrec2011/hetrec2011-lastfm-2k.zip",
        licence="HetRec 2011 readme: made available for non-commercial use (commercial use: ask Last.fm); "
        "cite Cantador, Brusilovsky & Kuflik (2011); no redistribution terms",
    ),
    "steam": PaperDataset(
        name="steam",
        items=3581,
        rows={"train": 1000, "val": 1194, "test": 1194},
        digests={
            "items.csv": "3abe30db2dcab51b484c1a73aa04ce2b054bbf9691aed5f654473c78840296cb",
            "train_sample1000.jsonl": "ed9ba4730e597ef7010d5ec69c5d90a5e2ffed7922444855a2e8fa80414aeb23",
            "val.jsonl": "6c3e980c83ff644de77d19c6d0e558c7d0fbb32ae4d5b2ca15344c3fb29c83a6",
            "test.jsonl": "378f4c23336fff71105e6e8733b416d39115dc91b5d01a2475da538f9f2e18a9",
        },
        public_source="Steam reviews (McAuley lab, UCSD; Kang & McAuley 2018)",
        public_url="https://cseweb.ucsd.edu/~wckang/steam_reviews.json.gz",
        licence="UCSD: for research use; cite Kang & McAuley (2018), Wan & McAuley (2018), "
        "Pathak et al. (2017); no redistribution terms",
        notes=("the published Steam training set is a 1,000-row sample; the full one is not available",),
    ),
}


def paper_dataset(name: str) -> PaperDataset:
    try:
        return PAPER_DATASETS[name]
    except KeyError:
        raise PaperDataError(f"unknown paper dataset {name!r}; one of {', '.join(PAPER_DATASETS)}") from None


def mismatches(src: Path, spec: PaperDataset) -> list[str]:
    """What in ``src`` differs from LLaRA's files: missing files and files with another SHA-256."""
    found = []
    for file, digest in spec.digests.items():
        path = Path(src) / file
        if not path.is_file():
            found.append(f"{file} is missing")
        elif sha256_file(path) != digest:
            found.append(
                f"{file} differs from LLaRA's (SHA-256 {sha256_file(path)[:12]}, known {digest[:12]})"
            )
    return found


def is_llara_copy(src: Path, name: str) -> bool:
    """Whether ``src`` holds exactly LLaRA's files of the paper dataset ``name``."""
    return name in PAPER_DATASETS and not mismatches(src, PAPER_DATASETS[name])


def paper_copy(src: Path) -> str | None:
    """The paper dataset (other than MovieLens, verified by its own rule) whose LLaRA files ``src`` holds."""
    for name in ("lastfm", "steam"):
        if is_llara_copy(src, name):
            return name
    return None
