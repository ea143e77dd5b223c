"""`python -m cliques` runs the `cliques` command."""

from cliques.cli import main

raise SystemExit(main())
