"""`python -m staticexec`: the `staticexec` command."""

from staticexec.cli import run

run()
