"""The DRA claims of a CliqueSet (`spec.resourceClaims`), planned (pure): which claim
entries its pods get, the ResourceClaims and ResourceClaimTemplates the operator makes for
them, and which of those go (docs/gangs.md, "DRA claims per gang").

- **Scopes.** `Pod`: a ResourceClaimTemplate `<set>-<h>-<claim>-<hash>`; the control
  plane makes a claim per pod. `Set`: one ResourceClaim `<set>-<h>-<claim>-<hash>` all the
  named cliques' pods share. `Gang`: one claim per gang, shared by that gang's pods: where
  the server keeps a PodGroup's `resourceClaims` (`DRAWorkloadResourceClaims`) the gang's
  PodGroup lists the template `<set>-<h>-<claim>-<hash>` and the control plane makes the
  claim for the group (owned by it, so it goes with the group); elsewhere the operator
  makes a ResourceClaim `<set>-<h>-<gang>-<claim>-<hash>` per gang.
- **Names carry the claim's hash** (its scope and template): a claim that changes is a new
  object, and the gangs that used the old one keep it until they are made again. **And
  the hash of their parts** (`<h>`, `labels.generated_name`): set `a` with claim `1-x` and
  set `a-1` with claim `x` never name one object. Objects named before that hash (and the
  Cliques that name them) are kept, and made again, under their names (`legacy_names`).
- **Hashes.** A pod template's hash covers the claims its pods get and every Gang-scope
  claim, through the annotation `cliques.dev/resource-claims` (name, scope, hash); the
  entries added to `spec.resourceClaims` are left out of it (`unresolve`), so the hash is
  the same whichever way a gang's claim is made and for every gang. A set without claims
  hashes as it always did. A change of a Gang-scope claim changes the hash of every clique,
  so the gang is made again whole and moves to its new claim together.
- **Objects live while a Clique names them**: an object no Clique's template references
  (a removed gang, a claim changed and rolled out) is deleted; the API server keeps a
  claim that pods still use until they are gone (its `delete-protection` finalizer).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cliques.api import labels
from cliques.api.claim import ClaimObject, ClaimScope, CliqueSetClaim
from cliques.api.cliqueset import CliqueSet
from cliques.api.meta import ObjectMeta
from cliques.controllers.base.actions import Create, Delete
from cliques.kube import gangapi, store
from cliques.kube.informer import Informer
from cliques.kube.resources import RESOURCE_CLAIM_TEMPLATES, RESOURCE_CLAIMS, Resource
from cliques.kube.watches import Watch

#: Hex digits of a claim's hash in the names of its objects.
HASH_LENGTH: Final = 8
#: The pod-spec keys of a claim entry that reference a claim and a template.
CLAIM_KEY: Final = "resourceClaimName"
TEMPLATE_KEY: Final = "resourceClaimTemplateName"


def claim_hash(claim: CliqueSetClaim) -> str:
    """A hash of what a claim's objects are made of: its scope and its template."""
    basis = json.dumps(
        {"scope": claim.scope, "template": claim.template}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(basis.encode()).hexdigest()[:HASH_LENGTH]


def object_name(cliqueset: str, claim: CliqueSetClaim) -> str:
    """The ResourceClaimTemplate (Pod and Gang scope) or ResourceClaim (Set scope) of a
    claim: `<set>-<name hash>-<claim>-<claim hash>`. `<set>-<claim>` alone reads two ways
    (set `a` with claim `1-x`, set `a-1` with claim `x`), so the name carries the hash of
    its parts (`labels.generated_name`)."""
    return labels.generated_name(
        cliqueset, claim.name, claim_hash(claim), limit=labels.MAX_OBJECT_NAME_LENGTH, hashed=True
    )


def gang_claim_name(cliqueset: str, gang: int, claim: CliqueSetClaim) -> str:
    """The ResourceClaim the operator makes for gang `gang` (Gang scope, no PodGroup
    claims): `<set>-<name hash>-<gang>-<claim>-<claim hash>`, as `object_name`."""
    return labels.generated_name(
        cliqueset,
        gang,
        claim.name,
        claim_hash(claim),
        limit=labels.MAX_OBJECT_NAME_LENGTH,
        hashed=True,
    )


def legacy_names(cliqueset: str, claim: CliqueSetClaim, gang: int) -> tuple[str, str]:
    """The names an operator before `labels.generated_name` gave a claim's objects
    (`object_name`'s, `gang_claim_name`'s), without the hash of their parts: the Cliques
    made then still name them, and their objects are kept, and made again, under them."""
    ch = claim_hash(claim)
    return f"{cliqueset}-{claim.name}-{ch}", f"{cliqueset}-{gang}-{claim.name}-{ch}"


def group_claims(cqs: CliqueSet) -> tuple[tuple[str, str], ...]:
    """(name, ResourceClaimTemplate) of each Gang-scope claim: what a gang's PodGroup lists
    in `resourceClaims` where the server keeps it."""
    name = cqs.metadata.name
    return tuple(
        (c.name, object_name(name, c))
        for c in cqs.spec.resource_claims
        if c.scope == ClaimScope.GANG
    )


def _hashed(cqs: CliqueSet, clique: str) -> list[dict[str, str]]:
    """The claims that make clique `clique`'s hash: those its pods get and every Gang one."""
    return [
        {"name": c.name, "scope": c.scope, "hash": claim_hash(c)}
        for c in cqs.spec.resource_claims
        if c.applies_to(clique) or c.scope == ClaimScope.GANG
    ]


def _annotated(template: Mapping[str, Any], value: str) -> dict[str, Any]:
    """A copy of `template`'s top level and metadata with the claims annotation set."""
    meta = dict(template.get("metadata") or {})
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        labels.ANNOTATION_RESOURCE_CLAIMS: value,
    }
    return {**template, "metadata": meta}


def hash_basis(template: Mapping[str, Any], cqs: CliqueSet, clique: str) -> Mapping[str, Any]:
    """What clique `clique`'s template hash is taken of: `template` itself when no claim
    concerns the clique (a set without claims hashes as it always did), else with the
    claims annotation."""
    hashed = _hashed(cqs, clique) if cqs.spec.resource_claims else []
    if not hashed:
        return template
    return _annotated(template, json.dumps(hashed, separators=(",", ":")))


def pod_claims(cqs: CliqueSet, clique: str, gang: int, via_group: bool) -> list[dict[str, str]]:
    """The `spec.resourceClaims` entries the operator adds to clique `clique`'s pods in gang
    `gang`; `via_group`: the gang's PodGroup lists its Gang-scope claims."""
    name = cqs.metadata.name
    out = []
    for c in cqs.spec.resource_claims:
        if not c.applies_to(clique):
            continue
        if c.scope == ClaimScope.POD or (c.scope == ClaimScope.GANG and via_group):
            out.append({"name": c.name, TEMPLATE_KEY: object_name(name, c)})
        elif c.scope == ClaimScope.GANG:
            out.append({"name": c.name, CLAIM_KEY: gang_claim_name(name, gang, c)})
        else:
            out.append({"name": c.name, CLAIM_KEY: object_name(name, c)})
    return out


def resolve(
    template: Mapping[str, Any], cqs: CliqueSet, clique: str, gang: int, via_group: bool
) -> Mapping[str, Any]:
    """The pod template of clique `clique` in gang `gang` with its claims: the annotation of
    `hash_basis` and the entries of `pod_claims` after the template's own. `template`
    itself for a set without claims (never copied)."""
    if not cqs.spec.resource_claims:
        return template
    out = hash_basis(template, cqs, clique)
    entries = pod_claims(cqs, clique, gang, via_group)
    if entries:
        spec = dict(out.get("spec") or {})
        spec["resourceClaims"] = [*(spec.get("resourceClaims") or []), *entries]
        out = {**out, "spec": spec}
    return out


def added(template: Mapping[str, Any]) -> set[str]:
    """The claim names the operator added to a pod template (from its annotation)."""
    meta = template.get("metadata")
    raw = ((meta or {}).get("annotations") or {}).get(labels.ANNOTATION_RESOURCE_CLAIMS)
    if not isinstance(raw, str):
        return set()
    try:
        found = json.loads(raw)
    except ValueError:
        return set()
    if not isinstance(found, list):
        return set()
    return {c["name"] for c in found if isinstance(c, dict) and isinstance(c.get("name"), str)}


def unresolve(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Clique's pod template without the claim entries the operator added (so it hashes
    as `hash_basis` does); `template` itself when it has none."""
    names = added(template)
    spec = template.get("spec")
    if not names or not isinstance(spec, Mapping):
        return template
    entries = spec.get("resourceClaims")
    if not isinstance(entries, list):
        return template
    kept = [e for e in entries if not (isinstance(e, Mapping) and e.get("name") in names)]
    new_spec = dict(spec)
    if kept:
        new_spec["resourceClaims"] = kept
    else:
        new_spec.pop("resourceClaims", None)
    return {**template, "spec": new_spec}


@dataclass(frozen=True)
class View:
    """What the CliqueSet planner reads for DRA claims: whether the operator watches claim
    objects (resource.k8s.io/v1 is served), and the ResourceClaims and
    ResourceClaimTemplates the set owns, by resource."""

    served: bool = True
    objects: Mapping[Resource, list[ObjectMeta]] = field(default_factory=dict)


def _resource_claims(api: gangapi.GangAPI) -> Resource | None:
    return RESOURCE_CLAIMS if api.claims else None


def _resource_claim_templates(api: gangapi.GangAPI) -> Resource | None:
    return RESOURCE_CLAIM_TEMPLATES if api.claims else None


#: What DRA claims watch: the ResourceClaims and ResourceClaimTemplates the CliqueSets
#: own, where the cluster serves resource.k8s.io/v1 and the operator may list them.
WATCHES: Final[tuple[Watch, ...]] = (
    Watch("resource_claims", ClaimObject, _resource_claims, indexers=store.BY_CONTROLLER),
    Watch(
        "resource_claim_templates",
        ClaimObject,
        _resource_claim_templates,
        indexers=store.BY_CONTROLLER,
    ),
)


@dataclass(frozen=True)
class Informers:
    """The informers of `WATCHES` (none where the cluster does not serve claims)."""

    objects: tuple[Informer[ClaimObject], ...] = ()

    @classmethod
    def of(cls, informers: Mapping[str, Any]) -> Informers:
        """From the informers by watch name."""
        return cls(tuple(informers[w.name] for w in WATCHES if w.name in informers))

    def owned(self) -> tuple[Informer[Any], ...]:
        """The informers of objects a CliqueSet owns (a change wakes it)."""
        return self.objects

    def view(self, owner: str) -> View:
        """What the planner reads of the claim objects of owner `owner`."""
        return View(
            served=bool(self.objects),
            objects={
                i.resource: [o.metadata for o in i.store.by_index("controller", owner)]
                for i in self.objects
            },
        )


@dataclass(frozen=True)
class Ref:
    """An object a Clique's pods reference for a claim the operator added."""

    resource: Resource
    name: str
    #: the `spec.resourceClaims` entry
    claim: str
    gang: int


def references(template: Mapping[str, Any], gang: int) -> list[Ref]:
    """The objects the operator's claim entries of a pod template in gang `gang` name."""
    names = added(template)
    entries = (template.get("spec") or {}).get("resourceClaims")
    if not names or not isinstance(entries, list):
        return []
    out = []
    for e in entries:
        if not isinstance(e, Mapping) or e.get("name") not in names:
            continue
        if isinstance(e.get(CLAIM_KEY), str):
            out.append(Ref(RESOURCE_CLAIMS, e[CLAIM_KEY], e["name"], gang))
        elif isinstance(e.get(TEMPLATE_KEY), str):
            out.append(Ref(RESOURCE_CLAIM_TEMPLATES, e[TEMPLATE_KEY], e["name"], gang))
    return out


def _meta(
    cqs: CliqueSet, name: str, claim: CliqueSetClaim, bucket: str, owner: dict[str, Any]
) -> dict[str, Any]:
    own = claim.template.get("metadata") or {}
    meta = cqs.metadata
    return {
        "name": name,
        "namespace": meta.namespace,
        "labels": {
            **(own.get("labels") or {}),
            labels.LABEL_CLIQUESET: meta.name,
            labels.LABEL_CLAIM: claim.name,
            labels.LABEL_BUCKET: bucket,
        },
        **({"annotations": own["annotations"]} if own.get("annotations") else {}),
        "ownerReferences": [owner],
    }


def body(
    cqs: CliqueSet, ref: Ref, claim: CliqueSetClaim, bucket: str, owner: dict[str, Any]
) -> dict[str, Any]:
    """The ResourceClaimTemplate or ResourceClaim `ref` names, made from `claim`, with the
    owner reference `owner` (the set's)."""
    meta = _meta(cqs, ref.name, claim, bucket, owner)
    spec = claim.template.get("spec") or {}
    if ref.resource == RESOURCE_CLAIM_TEMPLATES:
        inner: dict[str, Any] = {"spec": spec}
        if claim.template.get("metadata"):
            inner["metadata"] = claim.template["metadata"]
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": meta,
            "spec": inner,
        }
    if claim.scope == ClaimScope.GANG:
        meta["labels"][labels.LABEL_GANG_INDEX] = str(ref.gang)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": spec,
    }


def source(cqs: CliqueSet, ref: Ref) -> CliqueSetClaim | None:
    """The claim of the set as it is now that `ref`'s object is made of; None when the
    object comes from an older version of the set (it can no longer be made)."""
    name = cqs.metadata.name
    for c in cqs.spec.resource_claims:
        if c.name != ref.claim:
            continue
        legacy_object, legacy_gang = legacy_names(name, c, ref.gang)
        if ref.resource == RESOURCE_CLAIM_TEMPLATES and c.scope in (
            ClaimScope.POD,
            ClaimScope.GANG,
        ):
            return c if ref.name in (object_name(name, c), legacy_object) else None
        if ref.resource == RESOURCE_CLAIMS and c.scope == ClaimScope.SET:
            return c if ref.name in (object_name(name, c), legacy_object) else None
        if ref.resource == RESOURCE_CLAIMS and c.scope == ClaimScope.GANG:
            return c if ref.name in (gang_claim_name(name, ref.gang, c), legacy_gang) else None
    return None


@dataclass
class ClaimPlan:
    """The writes that keep a CliqueSet's claim objects matching what its Cliques name."""

    creates: list[Create] = field(default_factory=list)
    deletes: list[Delete] = field(default_factory=list)
    #: objects a Clique names that the set can no longer make (from an older spec)
    missing: list[str] = field(default_factory=list)


def plan(
    cqs: CliqueSet,
    refs: Iterable[Ref],
    have: Mapping[Resource, Iterable[ObjectMeta]],
    bucket: str,
    owner: dict[str, Any],
) -> ClaimPlan:
    """`refs`: what every Clique of the set names, and the Cliques this plan makes or rolls;
    `have`: the claim objects the set owns, by resource; `owner`: the owner reference to
    the set. Missing ones are made, unnamed ones deleted."""
    out = ClaimPlan()
    uid, ref_owner = cqs.metadata.uid, owner
    existing = {(r, m.name): m for r, metas in have.items() for m in metas}
    wanted: dict[tuple[Resource, str], Ref] = {}
    for ref in refs:
        wanted.setdefault((ref.resource, ref.name), ref)
    for key, ref in sorted(wanted.items(), key=lambda kv: (kv[0][0].plural, kv[0][1])):
        if key in existing:
            continue
        claim = source(cqs, ref)
        if claim is None:
            out.missing.append(f"{ref.resource.kind} {ref.name}")
            continue
        out.creates.append(
            Create(ref.resource, ref.name, body(cqs, ref, claim, bucket, ref_owner), uid)
        )
    for (resource, name), meta in sorted(
        existing.items(), key=lambda kv: (kv[0][0].plural, kv[0][1])
    ):
        if (resource, name) not in wanted and meta.deletion_timestamp is None:
            out.deletes.append(Delete(resource, name, meta.uid, uid, "Unused"))
    return out


#: The CliqueSet condition on its claims (a set with `spec.resourceClaims` only).
CONDITION_CLAIMS: Final = "ResourceClaims"
#: What the scheduler says of a pod whose claim asks for a class no one made.
_NO_CLASS: Final = re.compile(r"request ([^\s:]+): device class (\S+) does not exist")
#: ... and of one whose claims find no free devices.
_NO_DEVICES: Final = "cannot allocate all claims"


def _requesting(cqs: CliqueSet, request: str, device_class: str) -> list[str]:
    """The claims of the set with a request `request` of class `device_class`."""
    out = []
    for c in cqs.spec.resource_claims:
        requests = ((c.template.get("spec") or {}).get("devices") or {}).get("requests") or []
        for r in requests:
            if not isinstance(r, Mapping):
                continue
            exactly = r.get("exactly") or {}
            classes = [exactly.get("deviceClassName")] + [
                s.get("deviceClassName")
                for s in r.get("firstAvailable") or []
                if isinstance(s, Mapping)
            ]
            if r.get("name") == request and device_class in classes:
                out.append(c.name)
    return out


def _gangs(indices: Iterable[int]) -> str:
    shown = sorted(set(indices))
    more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
    return ", ".join(map(str, shown[:5])) + more


def condition(
    cqs: CliqueSet, waiting: Iterable[tuple[int, str]], missing: Iterable[str] = ()
) -> tuple[Literal["True", "False"], str, str]:
    """(status, reason, message) of `CONDITION_CLAIMS` from what the scheduler says of the
    gangs' waiting pods (`waiting`: gang index, the message of a Clique's PodsUnschedulable
    condition) and the claim objects that cannot be made (`ClaimPlan.missing`)."""
    no_class: dict[tuple[str, str], set[int]] = {}
    no_devices: set[int] = set()
    for gang, message in waiting:
        for request, device_class in _NO_CLASS.findall(message):
            no_class.setdefault((request, device_class.rstrip(".,;")), set()).add(gang)
        if _NO_DEVICES in message:
            no_devices.add(gang)
    if no_class:
        parts = []
        for (request, device_class), gangs in sorted(no_class.items()):
            names = _requesting(cqs, request, device_class)
            who = f"claim {', '.join(names)}" if names else "a claim of the pod template"
            parts.append(
                f"{who}: device class {device_class} does not exist (request {request}); "
                f"pods of gang(s) {_gangs(gangs)} wait for it"
            )
        return "False", "DeviceClassNotFound", "; ".join(parts)
    lost = sorted(missing)
    if lost:
        return "False", "ClaimMissing", f"{', '.join(lost[:5])} named by Cliques, not found"
    if no_devices:
        return (
            "False",
            "DevicesUnavailable",
            f"pods of gang(s) {_gangs(no_devices)} wait: the scheduler cannot allocate all "
            "their claims (no free devices); they start when devices are freed or added",
        )
    kinds = ", ".join(f"{c.name} ({c.scope})" for c in cqs.spec.resource_claims)
    return "True", "Allocatable", f"no pod waits for a device; claims: {kinds}"
