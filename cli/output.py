"""``--json`` prints only JSON on stdout: every other line of the command goes to stderr.

Commands print their human report and then, with ``--json``, one JSON object as the last line
(``typer.echo(json.dumps(...))``). Rather than teach every command two kinds of output, the
entry point routes stdout line by line while a ``--json`` command runs: a line (or a block of
lines, for indented JSON) that parses as a JSON object goes to stdout, the rest to stderr, so
``recloop eval ... --json | jq`` reads one object and a person still sees the report.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


class JsonRouter(io.TextIOBase):
    """A text stream that sends JSON objects to ``machine`` and every other line to ``human``."""

    def __init__(self, machine: TextIO, human: TextIO):
        self.machine, self.human = machine, human
        self._partial = ""
        self._block: list[str] = []
        """Lines of a JSON object spread over several lines (``indent=2``), until it parses."""

    @property
    def encoding(self) -> str:  # click asks before it writes
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            self._line(line)
        return len(text)

    def _line(self, line: str) -> None:
        if self._block or line.startswith("{"):
            self._block.append(line)
            block = "\n".join(self._block)
            if _is_json_object(block):
                self.machine.write(block + "\n")
                self.machine.flush()
                self._block = []
            return
        self.human.write(line + "\n")

    def flush(self) -> None:
        self.human.flush()
        self.machine.flush()

    def close_out(self) -> None:
        """At the end: what never became a JSON object was for people."""
        rest = [*self._block, self._partial] if self._partial else self._block
        if rest:
            self.human.write("\n".join(rest) + "\n")
        self._block, self._partial = [], ""
        self.flush()


@contextmanager
def json_only_stdout(enabled: bool) -> Iterator[None]:
    if not enabled:
        yield
        return
    real = sys.stdout
    router = JsonRouter(machine=real, human=sys.stderr)
    sys.stdout = router
    try:
        yield
    finally:
        sys.stdout = real
        router.close_out()
