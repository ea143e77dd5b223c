"""A CliqueSet's rollout, as a person's tools see it: the history of its gang templates and the
way back to one of them (`history`), and a restart of every gang (`restart`), read and
written through the API server as the person running the tool, never through the operator.

It sits above the controllers (it reads the revisions the operator records,
`controllers.features.revisions`, and hashes a set's templates as the operator does) and
below the commands that show it (`kubectl cliques rollout`)."""
