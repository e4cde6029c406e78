"""The command line that reproduces the running command, for the top of its report."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

try:  # typer vendors its own click (typer._click) and offers no public accessor of the context
    from typer._click.globals import get_current_context
except ImportError:  # older typer: plain click
    from click import get_current_context

LEFT_OUT = {"as_json", "progress", "run_dir"}
"""Options that change how a run is shown or where it is written, not its numbers."""


def command_line() -> str:
    """``recloop eval ... --option value`` of the current click command: every option whose value
    is not its default, paths inside the working directory made relative (no machine paths)."""
    ctx = get_current_context(silent=True)
    if ctx is None:  # called from Python, not from the command line
        return "(not run from the command line)"
    parts = ["recloop", *ctx.command_path.split()[1:]]
    for param in ctx.command.params:
        if param.param_type_name != "option" or param.name in LEFT_OUT:
            continue
        value = ctx.params.get(param.name)
        if value is None or value == param.default or (param.multiple and not value):
            continue
        if param.is_flag:
            flag = param.opts[0] if value else (param.secondary_opts or [param.opts[0]])[0]
            parts.append(flag)
            continue
        for one in value if param.multiple else [value]:
            parts += [param.opts[0], _plain(one)]
    return shlex.join(parts)


def _plain(value: Any) -> str:
    if isinstance(value, Path | str) and os.sep in str(value):
        path = Path(value)
        try:
            return str(path.resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(path)
    return str(value)
