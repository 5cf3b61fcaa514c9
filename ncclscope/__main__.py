"""`python -m ncclscope` runs the CLI."""

from ncclscope.cli import run

run()
