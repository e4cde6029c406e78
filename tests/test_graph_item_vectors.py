"""Item vectors the offline agents read (graph/item_vectors.py)."""

from __future__ import annotations

import json

import torch

from graph.caches import LoopCaches
from graph.config import LoopConfig
from graph.item_vectors import load_vectors
from recmodels.dataset import Dataset
from recmodels.sasrec import SASRec, SASRecConfig
from recmodels.scorer import Scorer, ScorerInfo


def test_the_agents_read_one_copy_of_the_reward_models_item_vectors(tmp_path):
    """[N, H] floats per copy (256 MB at 10^6 items): with the process's caches, every agent that
    reads the collaborative vectors of one reward model gets the same object."""
    torch.manual_seed(0)
    n_items = 50
    reward = Scorer(SASRec(n_items, SASRecConfig(hidden=8)), ScorerInfo("sasrec", "tiny", "", n_items))
    root = tmp_path / "tiny"
    root.mkdir()
    (root / "meta.json").write_text(json.dumps({"name": "tiny", "n_items": n_items}))
    (root / "items.jsonl").write_text(
        "".join(json.dumps({"id": i, "title": f"t{i}"}) + "\n" for i in range(n_items))
    )
    dataset = Dataset(root)
    config, caches = LoopConfig(data_dir=tmp_path), LoopCaches()
    first = load_vectors("collaborative", config, dataset, reward, caches)
    assert load_vectors("collaborative", config, dataset, reward, caches) is first
    uncached = load_vectors("collaborative", config, dataset, reward)
    assert uncached is not first and torch.equal(uncached.vectors, first.vectors)
