"""The first hour of a newcomer at the command line: `--version`, the serve banner, Ctrl-C."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

from cli import cli


def test_version_prints_the_package_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"recloop {version('recloop')}"


def test_a_later_serve_says_how_to_make_a_key_and_the_first_shows_its_key():
    from cli.service import serve_banner

    first = serve_banner("movielens", "http://127.0.0.1:8000", "rl_secret")
    assert any("rl_secret" in line for line in first)
    later = serve_banner("movielens", "http://127.0.0.1:8000", None)
    assert later[-1].strip() == "recloop keys create --owner YOUR_NAME"
    assert not any("rl_" in line for line in later)


def test_ctrl_c_exits_0_after_saying_the_server_stopped(capsys):
    import signal

    import pytest

    from cli.service import _exit_on_signal

    with pytest.raises(SystemExit) as stopped:
        _exit_on_signal(signal.SIGINT, None)
    assert stopped.value.code == 0
    assert "recloop stopped" in capsys.readouterr().err
    with pytest.raises(SystemExit) as terminated:
        _exit_on_signal(signal.SIGTERM, None)
    assert terminated.value.code == 128 + signal.SIGTERM


def test_json_router_sends_json_objects_to_stdout_and_every_other_line_to_stderr():
    import io
    import json

    from cli.output import JsonRouter

    machine, human = io.StringIO(), io.StringIO()
    router = JsonRouter(machine, human)
    router.write("HR@1 0.42 [0.33, 0.51]\nrun directory: runs/x\n")
    router.write('{"hr1": 0.42, "run_dir": "runs/x"}\n')
    router.write(json.dumps({"name": "movielens", "n": [1, 2]}, indent=2) + "\n")
    router.write("{ not json, but a person's brace\n")
    router.write("tail without newline")
    router.close_out()
    assert machine.getvalue().splitlines()[0] == '{"hr1": 0.42, "run_dir": "runs/x"}'
    assert json.loads("\n".join(machine.getvalue().splitlines()[1:])) == {"name": "movielens", "n": [1, 2]}
    assert human.getvalue().splitlines() == [
        "HR@1 0.42 [0.33, 0.51]",
        "run directory: runs/x",
        "{ not json, but a person's brace",
        "tail without newline",
    ]


def test_json_flag_keeps_stdout_pure_json_through_the_real_entry_point(cli_env):
    import json
    import os
    import subprocess
    import sys

    command = "from cli import main; main()"
    env = {**os.environ, "RECLOOP_DATA_DIR": str(cli_env)}
    shown = subprocess.run(
        [sys.executable, "-c", command, "data", "show", "movielens", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert json.loads(shown.stdout)["name"] == "movielens"  # all of stdout is the one object
    plain = subprocess.run(
        [sys.executable, "-c", command, "data", "show", "movielens"], capture_output=True, text=True, env=env
    )
    assert plain.returncode == 0 and "movielens" in plain.stdout and not plain.stdout.startswith("{")
