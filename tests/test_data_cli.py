"""`recloop data ...` end to end through the real command line (small inputs only)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli import cli


def _run(*args: str):
    return CliRunner().invoke(cli, ["data", *args])


def test_import_list_show(data_dir, shared_data):
    result = _run("import", str(shared_data / "steam"), "--name", "steam")
    assert result.exit_code == 0, result.output
    assert "train 1,000  val 1,194  test 1,194" in result.output
    assert "INCOMPLETE" in result.output

    listing = _run("list")
    assert listing.exit_code == 0
    assert "steam" in listing.output and "(train incomplete)" in listing.output

    shown = _run("show", "steam", "--json")
    meta = json.loads(shown.output)
    assert meta["eval_rows"] == {"train": 1000, "val": 1184, "test": 1186}
    assert (data_dir / "datasets" / "steam" / "meta.json").is_file()


def test_errors_are_one_line_and_exit_code_one(data_dir, shared_data, tmp_path):
    assert _run("import", str(shared_data / "steam"), "--name", "steam").exit_code == 0
    again = _run("import", str(shared_data / "steam"), "--name", "steam")
    assert again.exit_code == 1
    assert "already exists" in again.output and "--force" in again.output

    missing = _run("show", "nope")
    assert missing.exit_code == 1 and "no dataset at" in missing.output

    (tmp_path / "items.csv").write_text("item,title\ni1,A\n")
    bad = _run(
        "build",
        "csv",
        "--interactions",
        str(tmp_path / "none.csv"),
        "--items",
        str(tmp_path / "items.csv"),
        "--name",
        "x",
    )
    assert bad.exit_code == 1
    assert f"{tmp_path / 'none.csv'}: no such file" in bad.output


def test_build_csv(data_dir, tmp_path):
    (tmp_path / "items.csv").write_text("item,title\n" + "".join(f"i{k},Title {k}\n" for k in range(3)))
    rows = "".join(f"u{u},i{(u + t) % 3},{100 * u + t}\n" for u in range(10) for t in range(3))
    (tmp_path / "inter.csv").write_text("user,item,timestamp\n" + rows)
    result = _run(
        "build",
        "csv",
        "--interactions",
        str(tmp_path / "inter.csv"),
        "--items",
        str(tmp_path / "items.csv"),
        "--name",
        "tiny",
    )
    assert result.exit_code == 0, result.output
    assert "rows      train 24  val 1  test 1" in result.output


def test_fetch_with_an_existing_dataset_does_nothing(data_dir, shared_data):
    assert _run("import", str(shared_data / "movielens"), "--name", "movielens").exit_code == 0
    result = _run("fetch", "movielens")
    assert result.exit_code == 0, result.output
    assert "llara-import" in result.output and "verified  true" in result.output
