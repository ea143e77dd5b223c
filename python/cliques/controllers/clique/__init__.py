"""The Clique controller: its watches and reconcile (`controller`) and its pure plan of
pods in phases (`planner`)."""
