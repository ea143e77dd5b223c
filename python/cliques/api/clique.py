"""The Clique resource (`cliques.dev/v1alpha1`) as msgspec Structs.

A Clique is one role of one gang: the CliqueSet controller creates `<cliqueset>-<gang
index>-<clique name>` for every gang and every clique template, and the Clique controller
creates its pods `<clique>-0 .. <clique>-<replicas - 1>`. A user does not write Cliques;
their spec is a copy of the CliqueSet's clique template, resolved for one gang (so
`starts_after` holds Clique object names, not role names, and `min_available` is always
set by the controller).

The Clique CRD is generated from these Structs (`crdgen`, `RESOURCE`): the schema guards
the operator's own writes with the CliqueSet's counts and pod-template checks, and keeps
cliqueName and gangIndex immutable. The same encoding rules as `cliqueset`.
"""

import sys
from typing import Annotated, Any, ClassVar, Final

import msgspec

from cliques.api import labels, shapes
from cliques.api.cliquetemplate import MAX_CLIQUE_PODS, MAX_CLIQUES
from cliques.api.meta import (
    CONDITIONS,
    Condition,
    EqualValues,
    ListMeta,
    ObjectMeta,
    intern_strings,
)
from cliques.api.schema import (
    AGE,
    DNS1123_LABEL,
    INVALID,
    Column,
    Count,
    Count64,
    Resource,
    Rule,
    crd,
    immutable,
)

# The condition types a Clique reports.
CONDITION_READY: Final = "Ready"
CONDITION_STARTED: Final = "Started"


class CliqueSpec(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """The desired state of one clique of one gang."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        description="The desired state of one clique of one gang.",
        rules=[
            Rule(
                rule=(
                    "!has(self.minAvailable) || self.minAvailable <= "
                    "(has(self.replicas) ? self.replicas : 1)"
                ),
                message="spec.minAvailable must be less than or equal to spec.replicas",
                field_path=".minAvailable",
                reason=INVALID,
            )
        ],
    )

    clique_name: Annotated[
        str,
        crd(
            min_length=1,
            max_length=labels.MAX_CLIQUE_NAME_LENGTH,
            pattern=DNS1123_LABEL,
            description="The role name within the gang (the CliqueSet's clique template name).",
            rules=[immutable("spec.cliqueName")],
        ),
    ]
    gang_index: Annotated[
        Count,
        crd(
            description="The index of the gang this Clique belongs to.",
            rules=[immutable("spec.gangIndex")],
        ),
    ]
    replicas: Annotated[
        Count, crd(maximum=MAX_CLIQUE_PODS, description="Number of pods (at most 1,000).")
    ] = 1
    min_available: (
        Annotated[
            Count,
            crd(
                description=(
                    "Ready pods needed for the Clique to be available. Unset means replicas."
                )
            ),
        ]
        | None
    ) = None
    starts_after: Annotated[
        list[Annotated[str, crd(max_length=labels.MAX_OBJECT_NAME_LENGTH)]],
        crd(
            max_items=MAX_CLIQUES,
            list_type="set",
            description="Names of the Cliques (objects, same namespace) this one starts after.",
        ),
    ] = msgspec.field(default_factory=list)
    #: Start order is enforced after placement: every pod is created at once and those of
    #: a Clique with `starts_after` wait in an init container (`controllers.start_gate`).
    start_gate: Annotated[
        bool,
        crd(
            description=(
                "Enforce startsAfter after placement: create every pod at once, each with an "
                "init container that waits until the operator opens its start gate (the "
                "cliques.dev/start-gate annotation), once the Cliques named in startsAfter are "
                "Ready. Set with gang scheduling, whose scheduler binds none of a gang's pods "
                "until all of them exist."
            )
        ),
    ] = False
    template: Annotated[
        dict[str, Any],
        crd(
            shape=shapes.CliquePodTemplate,
            description=(
                "The PodTemplateSpec of this Clique's pods. Only metadata.labels, "
                "metadata.annotations and spec.containers are checked here."
            ),
        ),
    ]

    @property
    def effective_min_available(self) -> int:
        """`min_available`, or `replicas` where it is not set."""
        return self.replicas if self.min_available is None else self.min_available


class CliqueStatus(msgspec.Struct, kw_only=True, gc=False, rename="camel"):
    """The observed state of a Clique, computed from its pods. Every field is encoded."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        description="The observed state of a Clique, computed from its pods."
    )

    observed_generation: Count64 = 0
    replicas: Count = 0
    ready_replicas: Count = 0
    updated_replicas: Count = 0
    gang_restarts: Annotated[
        Count64, crd(description="The gang restart count the status reports for.")
    ] = 0
    queued_replicas: Annotated[
        Count,
        crd(
            description=(
                "Pods Kueue holds back with its admission gate until their gang is admitted."
            )
        ),
    ] = 0
    template_hash: Annotated[
        str,
        crd(max_length=63, description="The canonical hash of the template the pods run."),
    ] = ""
    hash_algorithm: Annotated[
        Count,
        crd(description="The version of the hash algorithm that computed templateHash."),
    ] = 0
    selector: Annotated[
        str,
        crd(description="The label selector of this Clique's pods, for the scale subresource."),
    ] = ""
    conditions: Annotated[list[Condition], CONDITIONS] = msgspec.field(default_factory=list)


class Clique(msgspec.Struct, kw_only=True, gc=False, omit_defaults=True, rename="camel"):
    """A Clique object. `api_version` and `kind` are filled in when absent."""

    __crd__: ClassVar[msgspec.Meta] = crd(
        rules=[
            Rule(
                rule=(
                    "!has(self.spec.startsAfter) || !(self.metadata.name in self.spec.startsAfter)"
                ),
                message="spec.startsAfter must not name the Clique itself",
                field_path=".spec.startsAfter",
                reason=INVALID,
            )
        ]
    )

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


RESOURCE: Final = Resource(
    root=Clique,
    kind=labels.KIND_CLIQUE,
    plural="cliques",
    short_names=("cq",),
    description="One clique (role) of one gang of a CliqueSet.",
    columns=(
        Column(
            name="Replicas",
            type="integer",
            description="Desired number of pods.",
            json_path=".spec.replicas",
        ),
        Column(
            name="Ready",
            type="integer",
            description="Ready pods.",
            json_path=".status.readyReplicas",
        ),
        Column(
            name="Updated",
            type="integer",
            description="Pods running the current template.",
            json_path=".status.updatedReplicas",
        ),
        Column(name="Clique", type="string", priority=1, json_path=".spec.cliqueName"),
        Column(name="Gang", type="integer", priority=1, json_path=".spec.gangIndex"),
        AGE,
    ),
)


class SharedTemplates:
    """Makes Cliques decoded for a cache share one copy of each distinct pod template (and
    of each distinct status condition list, kept in a table of their own, and of each
    owner reference list, finalizer list and `startsAfter` list, in a third), and one
    string of each API version, kind, role name and template hash.

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
        self._conditions = EqualValues(limit)
        self._parts = EqualValues(limit)
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
        meta, spec, status = clique.metadata, clique.spec, clique.status
        intern_strings(meta, annotations=True)
        intern = sys.intern
        clique.api_version = intern(clique.api_version)
        clique.kind = intern(clique.kind)
        spec.clique_name = intern(spec.clique_name)
        shared = self._parts.shared
        # A set's Cliques name the same owner; most have no finalizer, and a role's
        # Cliques start after the same ones.
        meta.owner_references = shared(meta.owner_references, b"o")
        meta.finalizers = shared(meta.finalizers, b"f")
        spec.starts_after = shared(spec.starts_after, b"a")
        if status is not None:
            status.template_hash = intern(status.template_hash)
            if status.conditions:
                # Cliques in the same state since the same second hold the same conditions
                status.conditions = self._conditions.shared(status.conditions)
        return clique

    def __len__(self) -> int:
        return len(self._by_json)
