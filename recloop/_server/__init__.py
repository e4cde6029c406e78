"""The server's packages as a wheel installs them, and the `recloop` command that runs them.

A wheel puts the checkout's top-level folders `cli/`, `app/`, `lab/`, `graph/`, `steering/`, `llm/`,
`recmodels/` and `migrations/` in this directory (see setup.py), not at the top of site-packages,
where they would overwrite, or be overwritten by, any other project's `app` or `graph`. ``main``
(the `recloop` command) puts this directory first on sys.path, so the server imports them under
their own names (`from graph...`); processes it spawns inherit that sys.path (multiprocessing's
spawn passes it on: uvicorn's workers when serving with several). Any other Python process of the
environment still finds the other project's `app` and `graph`, and `import recloop` (the client)
never imports these.

In a checkout, and in its editable install (`make install`), this directory holds only this file:
the packages are the checkout's own top-level folders and are imported as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

SERVER_DIR = Path(__file__).resolve().parent


def use_server_packages() -> None:
    """Make `import cli`, `app`, `lab`, `graph`, `steering`, `llm`, `recmodels`, `migrations` find
    recloop's own (wheel installs only)."""
    if not (SERVER_DIR / "app").is_dir():  # a checkout: they are top-level packages already
        return
    entry = str(SERVER_DIR)
    if entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)


def main() -> None:
    """The `recloop` command line (cli/)."""
    use_server_packages()
    from cli import main as cli_main

    cli_main()
