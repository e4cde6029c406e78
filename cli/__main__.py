"""`python -m cli ...` is `recloop ...`."""

from cli import main

main()
