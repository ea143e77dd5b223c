"""The Kubernetes layer every controller stands on.

`kubeconfig` (where the cluster is, how to authenticate), `client` (aiohttp transport,
msgspec decoding, rate limits, typed errors), `informer` + `store` (list/watch caches with
indexes), `watches` (what a controller watches, as data), `workqueue` (de-duplicated,
per-key backoff, delayed requeue), `expectations` (in-flight creates/deletes per owner
UID), `events` (Event recording). Modules are imported as namespaces:
`from cliques.kube import informer`. This layer imports only `cliques.api` and the Rust core.
"""
