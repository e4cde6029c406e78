"""The browser UI's files (static/): plain HTML, CSS and ES modules, served by app/api/ui.py.

Shipped as package data, so `recloop serve` needs no Node toolchain and the page loads nothing
from outside the service.
"""

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
