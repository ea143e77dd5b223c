"""The cliques API: typed views of CliqueSets, Cliques and Pods, and the names they carry.

The bottom layer of the operator (`cli -> operator -> controllers -> kube -> api`): it
imports nothing from the rest of `cliques`. Import it as a namespace::

    from cliques import api
    from cliques.api import labels

    cqs = api.decode_cliqueset(body)          # bytes from the API server -> CliqueSet
    body = api.encode(cqs)                    # -> valid Kubernetes JSON
    labels.clique_name("llama", 0, "leader")  # -> "llama-0-leader"

The decoders are reusable `msgspec.json.Decoder` instances' `decode` methods, built once
here; they accept `bytes` (or `str`) and raise `msgspec.ValidationError` (a `ValueError`)
naming the JSON path of a field of the wrong type. The Structs live in `meta`,
`cliqueset`, `clique`, `scalinggroup` and `pod`; the CRDs are generated from them
(`crdgen`, `make crds`) into `deploy/crds/`.
"""

from typing import Any

import msgspec

from cliques.api import labels
from cliques.api.backends import GangBackend
from cliques.api.claim import ClaimScope
from cliques.api.clique import Clique, CliqueList, CliqueSpec, CliqueStatus
from cliques.api.cliqueset import (
    CliqueSet,
    CliqueSetList,
    CliqueSetSpec,
    CliqueSetTemplate,
    StartupType,
    SubdomainPolicy,
)
from cliques.api.cliqueset_status import CliqueSetStatus
from cliques.api.cliquetemplate import CliqueTemplate
from cliques.api.meta import (
    Condition,
    ConditionStatus,
    ListMeta,
    ObjectMeta,
    OwnerReference,
    find_condition,
    format_time,
)
from cliques.api.pod import (
    ContainerImage,
    Pod,
    PodCondition,
    PodList,
    PodSpec,
    PodStatus,
    Toleration,
)
from cliques.api.policies import (
    ExclusivePolicy,
    FailurePolicy,
    GangDisruption,
    GangRestartPolicy,
    GangScheduling,
    InPlacePolicy,
    PackMode,
    PackPolicy,
    Placement,
    RestartBackoff,
    UpdateStrategy,
    UpdateStrategyType,
)

decode_cliqueset = msgspec.json.Decoder(CliqueSet).decode
decode_cliqueset_list = msgspec.json.Decoder(CliqueSetList).decode
decode_clique = msgspec.json.Decoder(Clique).decode
decode_clique_list = msgspec.json.Decoder(CliqueList).decode
decode_pod = msgspec.json.Decoder(Pod).decode
decode_pod_list = msgspec.json.Decoder(PodList).decode

#: Any Struct of this package -> compact JSON bytes.
encode = msgspec.json.Encoder().encode


def to_dict(obj: msgspec.Struct) -> dict[str, Any]:
    """A Struct as the JSON-ready dict a client library takes as a request body."""
    result = msgspec.to_builtins(obj)
    if not isinstance(result, dict):  # a Struct with array_like=True; none here
        raise TypeError(f"{type(obj).__name__} does not encode as a JSON object")
    return result


__all__ = [
    "ClaimScope",
    "Clique",
    "CliqueList",
    "CliqueSet",
    "CliqueSetList",
    "CliqueSetSpec",
    "CliqueSetStatus",
    "CliqueSetTemplate",
    "CliqueSpec",
    "CliqueStatus",
    "CliqueTemplate",
    "Condition",
    "ConditionStatus",
    "ContainerImage",
    "ExclusivePolicy",
    "FailurePolicy",
    "GangBackend",
    "GangDisruption",
    "GangRestartPolicy",
    "GangScheduling",
    "InPlacePolicy",
    "ListMeta",
    "ObjectMeta",
    "OwnerReference",
    "PackMode",
    "PackPolicy",
    "Placement",
    "Pod",
    "PodCondition",
    "PodList",
    "PodSpec",
    "PodStatus",
    "RestartBackoff",
    "StartupType",
    "SubdomainPolicy",
    "Toleration",
    "UpdateStrategy",
    "UpdateStrategyType",
    "decode_clique",
    "decode_clique_list",
    "decode_cliqueset",
    "decode_cliqueset_list",
    "decode_pod",
    "decode_pod_list",
    "encode",
    "find_condition",
    "format_time",
    "labels",
    "to_dict",
]
