"""Item vectors the offline agents read (graph/item_vectors.py)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from graph.agents.evidence import ItemVectors
from graph.caches import LoopCaches
from graph.config import LoopConfig
from graph.item_vectors import load_vectors
from recmodels.dataset import Dataset
from recmodels.sasrec import SASRec, SASRecConfig
from recmodels.scorer import Scorer, ScorerInfo


def _tiny_dataset(tmp_path: Path, n_items: int) -> Dataset:
    root = tmp_path / "tiny"
    root.mkdir()
    (root / "meta.json").write_text(json.dumps({"name": "tiny", "n_items": n_items}))
    lines = (json.dumps({"id": i, "title": f"t{i}"}) + "\n" for i in range(n_items))
    (root / "items.jsonl").write_text("".join(lines))
    return Dataset(root)


def test_the_agents_read_one_copy_of_the_reward_models_item_vectors(tmp_path):
    """[N, H] floats per copy (256 MB at 10^6 items): with the process's caches, every agent that
    reads the collaborative vectors of one reward model gets the same object."""
    torch.manual_seed(0)
    n_items = 50
    reward = Scorer(SASRec(n_items, SASRecConfig(hidden=8)), ScorerInfo("sasrec", "tiny", "", n_items))
    dataset = _tiny_dataset(tmp_path, n_items)
    config, caches = LoopConfig(data_dir=tmp_path), LoopCaches()
    first = load_vectors("collaborative", config, dataset, reward, caches)
    assert load_vectors("collaborative", config, dataset, reward, caches) is first
    uncached = load_vectors("collaborative", config, dataset, reward)
    assert uncached is not first and torch.equal(uncached.vectors, first.vectors)


def test_rows_read_on_demand_are_the_floats_of_a_normalised_copy(tmp_path):
    """The agents read a few rows per loop; each is normalised alone and equals that row of the
    whole matrix normalised (as the vectors were held before), for model-sized and text-sized rows."""
    from steering.similarity import CollaborativeSimilarity

    torch.manual_seed(0)
    n_items = 300
    reward = Scorer(SASRec(n_items, SASRecConfig(hidden=64)), ScorerInfo("sasrec", "tiny", "", n_items))
    collaborative = load_vectors(
        "collaborative", LoopConfig(data_dir=tmp_path), _tiny_dataset(tmp_path, n_items), reward
    )
    before = torch.nn.functional.normalize(CollaborativeSimilarity(reward).item_vectors, dim=1)
    text_source = torch.randn(n_items, 384) * 3
    text = ItemVectors("text", text_source)
    text_before = torch.nn.functional.normalize(text_source, dim=1)
    weight, _ = reward.model.output_embeddings()
    assert collaborative.source.data_ptr() == weight.data_ptr(), "the model's weights, not a copy"
    generator = torch.Generator().manual_seed(1)
    for _ in range(50):
        ids = torch.randint(
            0, n_items, (int(torch.randint(1, 30, (1,), generator=generator)),), generator=generator
        )
        assert torch.equal(collaborative.rows(ids.tolist()), before[ids])
        assert torch.equal(text.rows(ids.tolist()), text_before[ids])
    history, items = [5, 17, 240], [1, 2, 3, 250]
    profile = torch.tensor([0.7**2, 0.7, 1.0])
    expected = (before[items] @ ((profile / profile.sum()) @ before[history])).tolist()
    assert collaborative.history_similarity(items, history) == expected
    assert collaborative.closest(5, items)[1] == float((before[items] @ before[5]).max())
