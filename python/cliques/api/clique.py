"""The Clique resource (`cliques.dev/v1alpha1`) as msgspec Structs.

A Clique is one role of one gang: the CliqueSet controller creates `<cliqueset>-<gang
index>-<clique name>` for every gang and every clique template, and the Clique controller
creates its pods `<clique>-0 .. <clique>-<replicas - 1>`. A user does not write Cliques;
their spec is a copy of the CliqueSet's clique template, resolved for one gang (so
`starts_after` holds Clique object names, not role names, and `min_available` is always
set by the controller).

Mirrors `deploy/crds/cliques.cliques.dev.yaml`; the same encoding rules as `cliqueset`.
"""

from typing import Any, Final

import msgspec

from cliques.api import labels
from cliques.api.meta import Condition, ListMeta, ObjectMeta

# The condition types a Clique reports.
CONDITION_READY: Final = "Ready"
CONDITION_STARTED: Final = "Started"


class CliqueSpec(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The desired state of one clique of one gang."""

    #: The role name within the gang (the CliqueSet's clique template name).
    clique_name: str
    gang_index: int
    replicas: int = 1
    #: Ready pods needed for the clique to count as available; None means `replicas`.
    min_available: int | None = None
    #: Clique object names this one is started after.
    starts_after: list[str] = msgspec.field(default_factory=list)
    #: Start order is enforced after placement: every pod is created at once and those of
    #: a Clique with `starts_after` wait in an init container (`controllers.start_gate`).
    start_gate: bool = False
    #: A PodTemplateSpec (`metadata`, `spec`), kept as JSON.
    template: dict[str, Any]

    @property
    def effective_min_available(self) -> int:
        """`min_available`, or `replicas` where it is not set."""
        return self.replicas if self.min_available is None else self.min_available


class CliqueStatus(msgspec.Struct, kw_only=True, rename="camel"):
    """The observed state of a Clique, computed from its pods. Every field is encoded."""

    observed_generation: int = 0
    replicas: int = 0
    ready_replicas: int = 0
    updated_replicas: int = 0
    #: The gang restart count the status reports for.
    gang_restarts: int = 0
    #: Pods Kueue holds back (its admission scheduling gate) until their gang is admitted.
    queued_replicas: int = 0
    template_hash: str = ""
    hash_algorithm: int = 0
    selector: str = ""
    conditions: list[Condition] = msgspec.field(default_factory=list)


class Clique(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """A Clique object. `api_version` and `kind` are filled in when absent."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CliqueSpec
    status: CliqueStatus | None = None

    def __post_init__(self) -> None:
        # See CliqueSet.__post_init__: apiVersion and kind must survive omit_defaults.
        if not self.api_version:
            self.api_version = labels.API_VERSION
        if not self.kind:
            self.kind = labels.KIND_CLIQUE


class CliqueList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """The body of a LIST of Cliques."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Clique] = msgspec.field(default_factory=list)


class SharedTemplates:
    """Makes Cliques decoded for a cache share one copy of each distinct pod template.

    Every Clique of a role holds the same template (a copy of its CliqueSet's), so a cache
    of 10,000 Cliques held 10,000 equal nested dicts, about 3.6 KB each. Called on each
    decoded Clique (an informer's `transform`), this swaps its template for an equal one
    already seen: the key is the template's JSON, so two templates share only when they
    are equal. Templates are read-only to the operator (pods are built from copies), which
    is what makes sharing safe. At most `limit` distinct templates, and `max_bytes` of
    their JSON keys, are remembered (many distinct templates near the API server's 1.5 MB
    object limit must not double the cache); past either the table starts over, which
    costs sharing, never correctness.
    """

    def __init__(self, limit: int = 4096, max_bytes: int = 32 * 2**20) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self._by_json: dict[bytes, dict[str, Any]] = {}
        self._bytes = 0
        self._encode = msgspec.json.Encoder().encode

    def __call__(self, clique: Clique) -> Clique:
        key = self._encode(clique.spec.template)
        seen = self._by_json.get(key)
        if seen is None:
            if len(self._by_json) >= self.limit or self._bytes + len(key) > self.max_bytes:
                self._by_json.clear()
                self._bytes = 0
            self._by_json[key] = clique.spec.template
            self._bytes += len(key)
        else:
            clique.spec.template = seen
        return clique

    def __len__(self) -> int:
        return len(self._by_json)
