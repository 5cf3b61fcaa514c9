"""`python -m ncclscope` runs the CLI."""

from ncclscope.cli import main

raise SystemExit(main())
