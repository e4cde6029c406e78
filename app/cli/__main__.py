"""`python -m app.cli ...` is `recloop ...`."""

from app.cli import main

main()
