"""The RecBole time-to-quality bench: leave-one-out split, training chunks, all-position SASRec."""

from __future__ import annotations

from pathlib import Path

import torch

from bench.recbole_ttq import evaluate, leave_one_out, read_ratings, training_chunks
from recmodels.base import pad_histories
from recmodels.losses import all_positions_ce, full_softmax_ce
from recmodels.registry import build_model

# user, item, timestamp in file order. Raw items 2, 7, 10, 31 -> ids 0, 1, 2, 3 (numeric order).
RATINGS = [
    ("1", "10", 300),
    ("2", "7", 5),
    ("1", "2", 100),
    ("1", "31", 200),
    ("1", "7", 200),  # same second as item 31: file order decides (31 before 7)
    ("2", "2", 6),  # user 2 has two ratings: dropped (no training item)
    ("10", "31", 1),
    ("10", "2", 2),
    ("10", "7", 3),
]


def test_leave_one_out_is_time_ordered_with_stable_ties(tmp_path: Path) -> None:
    path = tmp_path / "u.data"
    path.write_text("".join(f"{u}\t{i}\t4\t{t}\n" for u, i, t in RATINGS))
    split = leave_one_out(read_ratings(path))
    assert split.n_items == 4
    assert split.users == ["1", "10"]
    # user 1 by time: 2 (100), 31 (200), 7 (200, later in the file), 10 (300)
    assert split.train == [[0, 3], [3]]
    assert split.val == [1, 0]
    assert split.test == [2, 1]


def test_training_chunks_cover_every_target_once_newest_longest() -> None:
    x, y = training_chunks([[0, 1, 2, 3, 4, 5], [7, 8]], max_len=3, pad_id=9)
    assert x.tolist() == [[2, 3, 4], [9, 0, 1], [9, 9, 7]]
    assert y.tolist() == [[3, 4, 5], [9, 1, 2], [9, 9, 8]]


def test_encode_positions_last_equals_encode_and_loss_matches_last_position() -> None:
    torch.manual_seed(0)
    model = build_model("sasrec", 30, max_len=6).eval()
    seqs = pad_histories([[1, 2, 3], [4, 5, 6, 7, 8, 9], [], [29]], 6, model.pad_id)
    states = model.encode_positions(seqs)
    assert states.shape == (4, 6, 64)
    assert torch.allclose(states[:, -1], model.encode(seqs))
    targets = torch.full_like(seqs, model.pad_id)
    targets[:, -1] = torch.tensor([4, 10, 0, 28])
    expected = full_softmax_ce(model, seqs, targets[:, -1])
    assert torch.allclose(all_positions_ce(model, seqs, targets, model.pad_id), expected)


def test_evaluate_masks_the_given_items() -> None:
    torch.manual_seed(0)
    model = build_model("sasrec", 12, max_len=4).eval()
    everything_but_target = [i for i in range(12) if i != 5]
    result = evaluate(model, [[1, 2]], [everything_but_target], [5])
    assert result == {"hit10": 1.0, "ndcg10": 1.0}
