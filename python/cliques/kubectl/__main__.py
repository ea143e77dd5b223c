"""`python -m cliques.kubectl`: the `kubectl-cliques` plugin without its console script."""

from cliques.kubectl import main

raise SystemExit(main())
