"""Checks for split files (JSON Lines rows) and item tables.

Every failure is a :class:`~recmodels.dataset.DatasetError` naming the file, the
1-based line and the reason, so a bad input can be fixed without a debugger.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recmodels.dataset import MAX_HISTORY, MIN_EVAL_LEN_SEQ, DatasetError

REQUIRED_ROW_KEYS = ("history", "next")


@dataclass(frozen=True)
class SplitStats:
    rows: int
    eval_rows: int  # rows with len_seq >= 3, the ones LLaRA/AFL evaluate on


def is_int(value: Any) -> bool:
    # JSON true/false load as bool, a subclass of int: never a valid id.
    return isinstance(value, int) and not isinstance(value, bool)


def _check_item_id(value: Any, n_items: int, path: Path, line: int, field: str) -> None:
    if not is_int(value):
        raise DatasetError(path, line, f"{field} must be an integer item id, got {value!r}")
    if not 0 <= value < n_items:
        raise DatasetError(path, line, f"unknown item id {value} in {field} (items are 0..{n_items - 1})")


def check_row(raw: Any, n_items: int, path: Path, line: int) -> int:
    """Validate one decoded row; return its ``len_seq``."""
    if not isinstance(raw, dict):
        raise DatasetError(path, line, f"expected a JSON object, got {type(raw).__name__}")
    missing = [key for key in REQUIRED_ROW_KEYS if key not in raw]
    if missing:
        raise DatasetError(path, line, f"missing key(s) {', '.join(missing)}")
    history = raw["history"]
    if not isinstance(history, list):
        raise DatasetError(path, line, f"history must be a list, got {type(history).__name__}")
    if len(history) > MAX_HISTORY:
        raise DatasetError(path, line, f"history has {len(history)} items, at most {MAX_HISTORY} allowed")
    for position, item in enumerate(history):
        _check_item_id(item, n_items, path, line, f"history[{position}]")
    _check_item_id(raw["next"], n_items, path, line, "next")

    expected_len_seq = max(1, len(history))
    len_seq = raw.get("len_seq", expected_len_seq)
    if len_seq != expected_len_seq or not is_int(len_seq):
        raise DatasetError(
            path,
            line,
            f"len_seq is {len_seq!r} but the history has {len(history)} items (expected {expected_len_seq})",
        )
    if "seq_padded" in raw:
        expected_padded = history + [n_items] * (MAX_HISTORY - len(history))
        if raw["seq_padded"] != expected_padded:
            raise DatasetError(
                path, line, f"seq_padded does not equal the history right-padded with {n_items}"
            )
    ratings = raw.get("history_ratings", history)
    if not isinstance(ratings, list) or len(ratings) != len(history):
        raise DatasetError(path, line, "history_ratings must be a list as long as history")
    return len_seq


def validate_split_file(
    path: Path, n_items: int, *, unique_row_ids: bool, report_as: Path | None = None
) -> SplitStats:
    """Check every row of a split file; ``unique_row_ids`` rejects a repeated ``row`` field.

    Errors name ``report_as`` when given (the original of a copy being checked).
    """
    shown = report_as or path
    rows = eval_rows = 0
    seen_row_ids: dict[Any, int] = {}
    with path.open("rb") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                raise DatasetError(shown, line_no, "blank line")
            try:
                raw = json.loads(line)  # bytes: json detects UTF-8 itself, and it is faster
            except UnicodeDecodeError:
                raise DatasetError(shown, line_no, "not UTF-8 text") from None
            except json.JSONDecodeError as exc:
                raise DatasetError(shown, line_no, f"invalid JSON: {exc.msg}") from None
            len_seq = check_row(raw, n_items, shown, line_no)
            if "row" in raw and not is_int(raw["row"]):
                raise DatasetError(shown, line_no, f"row must be an integer, got {raw['row']!r}")
            if unique_row_ids and "row" in raw:
                first = seen_row_ids.setdefault(raw["row"], line_no)
                if first != line_no:
                    raise DatasetError(
                        shown, line_no, f"duplicate row id {raw['row']} (first on line {first})"
                    )
            rows += 1
            eval_rows += len_seq >= MIN_EVAL_LEN_SEQ
    if rows == 0:
        raise DatasetError(shown, None, "empty file: no rows")
    return SplitStats(rows, eval_rows)


def read_csv_records(
    path: Path, required: tuple[str, ...], reserved: tuple[str, ...] = ()
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield (line number, record) of a headed UTF-8 CSV.

    The header must have the ``required`` columns and none of the ``reserved`` ones (names the
    caller writes itself, which an extra column would silently overwrite).
    """
    if not path.is_file():
        raise DatasetError(path, None, "no such file")
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        try:
            yield from _checked_records(reader, path, required, reserved)
        except UnicodeDecodeError as exc:
            raise DatasetError(path, reader.line_num + 1, f"not UTF-8 text ({exc.reason})") from None
        except csv.Error as exc:
            raise DatasetError(path, reader.line_num, f"malformed CSV ({exc})") from None


def _checked_records(
    reader: csv.DictReader, path: Path, required: tuple[str, ...], reserved: tuple[str, ...]
) -> Iterator[tuple[int, dict[str, str]]]:
    if not reader.fieldnames:
        raise DatasetError(path, None, "empty file: no header")
    clashing = [column for column in reserved if column in reader.fieldnames]
    if clashing:
        raise DatasetError(path, 1, f"reserved column name(s) {', '.join(clashing)}; rename them")
    missing = [column for column in required if column not in reader.fieldnames]
    if missing:
        header = ",".join(reader.fieldnames)
        raise DatasetError(path, 1, f"missing column(s) {', '.join(missing)} (header: {header})")
    any_record = False
    for record in reader:
        if None in record or None in record.values():
            raise DatasetError(path, reader.line_num, "wrong number of fields")
        any_record = True
        yield reader.line_num, record
    if not any_record:
        raise DatasetError(path, None, "empty file: header but no rows")


def parse_int(text: str, path: Path, line: int, field: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise DatasetError(path, line, f"{field} must be an integer, got {text!r}") from None


def check_contiguous_ids(ids: list[int], path: Path, id_lines: dict[int, int]) -> None:
    """Item ids must be exactly 0 .. n-1 (they index embedding rows); ids are unique already."""
    for expected, item_id in enumerate(sorted(ids)):
        if item_id != expected:
            reason = (
                f"item ids must be contiguous from 0; id {expected} is missing"
                if item_id > expected
                else f"negative item id {item_id}"
            )
            raise DatasetError(path, id_lines.get(item_id), reason)
