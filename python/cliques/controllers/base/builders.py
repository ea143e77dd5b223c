"""The bodies every controller and feature shares (pure): the controller owner reference,
the labels of every object of one gang, and the gangs' headless Services.

A headless Service publishes not-ready addresses and selects the pods of one gang, or of
the whole CliqueSet for the shared one. It lists the ports the pod templates' containers
declare (`service_ports`), each targeting its own number. Each body carries a controller
owner reference to the object it belongs to (`owner_reference`). The Cliques' bodies are
the CliqueSet controller's (`controllers.cliqueset.bodies`), the Pods' the Clique
controller's (`controllers.clique.bodies`).
"""

from __future__ import annotations

import re
from typing import Any

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet


def owner_reference(owner: CliqueSet | Clique) -> dict[str, Any]:
    """The controller owner reference to `owner` (a deletion of the owner waits for it)."""
    return {
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def gang_labels(cqs: CliqueSet, gang: int, bucket: str) -> dict[str, str]:
    """The labels of every object of one gang."""
    return {
        labels.LABEL_CLIQUESET: cqs.metadata.name,
        labels.LABEL_GANG_INDEX: str(gang),
        labels.LABEL_BUCKET: bucket,
    }


#: Protocols a Service port may carry.
_PROTOCOLS = ("TCP", "UDP", "SCTP")
#: A name a Service port may take from a container port (an IANA service name, lower case).
_PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$")


def service_ports(cqs: CliqueSet) -> list[dict[str, Any]]:
    """The ports of the CliqueSet's headless Services: every port the containers of its pod
    templates declare, once per number and protocol, in template order. Each targets its
    own number, so the pods of every role resolve it, and is named after its container port
    (or `<protocol>-<number>` when that name is missing or taken); ports the API server
    would refuse are left out.

    Ports matter beyond DNS SRV records: kube-controller-manager's endpoint-slice controller
    groups a Service's slices by their ports and takes the stored slices of a Service
    without ports for a different group from the one it computes, so it rewrites every
    slice of such a Service on every sync. From about a thousand pods (ten slices) on, its
    own writes start the next sync: every slice is rewritten once a second, for as long as
    the Service exists."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    names: set[str] = set()
    for tmpl in cqs.spec.template.cliques:
        spec = tmpl.template.get("spec")
        containers = spec.get("containers") if isinstance(spec, dict) else None
        for ctr in containers if isinstance(containers, list) else ():
            ports = ctr.get("ports") if isinstance(ctr, dict) else None
            for port in ports if isinstance(ports, list) else ():
                if not isinstance(port, dict):
                    continue
                number = port.get("containerPort")
                protocol = port.get("protocol", "TCP")
                if (
                    not isinstance(number, int)
                    or isinstance(number, bool)
                    or not 0 < number < 65536
                    or protocol not in _PROTOCOLS
                    or (number, protocol) in seen
                ):
                    continue
                name = port.get("name")
                if not isinstance(name, str) or not _PORT_NAME.match(name) or name in names:
                    name = f"{protocol.lower()}-{number}"
                    if name in names:  # a container port took this name for another number
                        continue
                seen.add((number, protocol))
                names.add(name)
                out.append(
                    {"name": name, "port": number, "protocol": protocol, "targetPort": number}
                )
    return out


def service_body(cqs: CliqueSet, gang: int | None, bucket: str) -> dict[str, Any]:
    """The headless Service of gang `gang`, or with `gang` None the one shared by every
    gang of the CliqueSet (its pods' subdomain)."""
    name = cqs.metadata.name
    selector = {labels.LABEL_CLIQUESET: name}
    if gang is None:
        svc_name = labels.set_service_name(name)
        svc_labels = {labels.LABEL_CLIQUESET: name, labels.LABEL_BUCKET: bucket}
    else:
        svc_name = labels.gang_service_name(name, gang)
        svc_labels = gang_labels(cqs, gang, bucket)
        selector[labels.LABEL_GANG_INDEX] = str(gang)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": svc_name,
            "namespace": cqs.metadata.namespace,
            "labels": svc_labels,
            "ownerReferences": [owner_reference(cqs)],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector,
            **({"ports": ports} if (ports := service_ports(cqs)) else {}),
        },
    }
