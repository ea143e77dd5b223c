"""The CliqueSet controller: its watches and reconcile (`controller`), its pure plan in
steps (`planner`), the gang verdicts and the pick of the gangs to roll (`rollout`), and its
status (`status`)."""
