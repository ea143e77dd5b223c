"""The DNS layout of a CliqueSet's gangs (pure): which headless Services it needs, and what
the Cliques of a new gang record so that their pods get a hostname and subdomain.

- `spec.subdomainPolicy: Shared`: one headless Service named after the CliqueSet; pod
  hostnames `<clique>-<gang>-<pod index>`, so they are unique in it. `UniquePerGang`: one
  Service `<set>-<gang>` per gang; hostnames `<clique>-<pod index>`.
- A gang keeps the layout it was created with: its Cliques record it in annotations (the
  subdomain, the leader address, the policy) and the Clique controller builds pods from
  those, never from the CliqueSet. A Clique added to an existing gang copies its siblings'
  (`gang_annotations`). So a changed policy applies to gangs created afterwards, and no pod
  is ever recreated for it (a pod's hostname and subdomain are immutable).
- Left out, the policy is what the CliqueSet's gangs already use: a CliqueSet made by a
  release without the field (whose Cliques have a subdomain and no policy annotation) stays
  `UniquePerGang`; one without gangs gets `Shared` (`policy`). The CRD gives the field no
  default on purpose: the API server applies a CRD default to stored objects on read too,
  which would move the new gangs of every existing CliqueSet on an upgrade.
- In a set with scaling groups, the pods of an instance of a group are led by pod 0 of the
  instance's first clique; the others by the gang's first clique outside the groups
  (`member_annotations`).
- The Services wanted are the subdomains the live gangs' Cliques record, plus the one a
  gang without Cliques will get (`wanted_services`): a Service is deleted only once no gang
  uses it, and never while `headlessService` is on and a Clique of the set records it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from cliques.api import labels
from cliques.api.clique import Clique
from cliques.api.cliqueset import CliqueSet, SubdomainPolicy
from cliques.controllers.features import scaling

#: The annotations that make up a gang's DNS layout, on every Clique of the gang.
LAYOUT_ANNOTATIONS = (
    labels.ANNOTATION_SUBDOMAIN,
    labels.ANNOTATION_LEADER_ADDRESS,
    labels.ANNOTATION_SUBDOMAIN_POLICY,
)


def _live(cliques: Iterable[Clique]) -> list[Clique]:
    return [c for c in cliques if c.metadata.deletion_timestamp is None]


def recorded_policy(clique: Clique) -> str:
    """The layout a Clique's gang was made with: Shared, UniquePerGang, or "" (no Service)."""
    ann = clique.metadata.annotations
    if not ann.get(labels.ANNOTATION_SUBDOMAIN):
        return ""
    if ann.get(labels.ANNOTATION_SUBDOMAIN_POLICY) == SubdomainPolicy.SHARED:
        return SubdomainPolicy.SHARED
    return SubdomainPolicy.UNIQUE_PER_GANG  # older releases wrote no policy: one Service per gang


def policy(cqs: CliqueSet, cliques: Iterable[Clique]) -> str:
    """The subdomain policy of the CliqueSet's new gangs: the spec's, or, left out,
    UniquePerGang if a live gang was made that way and Shared otherwise."""
    if cqs.spec.subdomain_policy is not None:
        return cqs.spec.subdomain_policy
    sub, pol, shared = (
        labels.ANNOTATION_SUBDOMAIN,
        labels.ANNOTATION_SUBDOMAIN_POLICY,
        SubdomainPolicy.SHARED,
    )
    for c in cliques:
        # `recorded_policy(c) == UniquePerGang`, inlined: a set of thousands of Cliques
        # asks it of every one in every plan.
        meta = c.metadata
        ann = meta.annotations
        if meta.deletion_timestamp is None and ann.get(sub) and ann.get(pol) != shared:
            return SubdomainPolicy.UNIQUE_PER_GANG
    return SubdomainPolicy.SHARED


def new_gang_annotations(cqs: CliqueSet, gang: int, policy_: str) -> dict[str, str]:
    """The layout annotations of the Cliques of a new gang (none without headless Service):
    the pods' subdomain, the leader address (pod 0 of the first clique) and the policy."""
    if not cqs.spec.headless_service:
        return {}
    name, ns = cqs.metadata.name, cqs.metadata.namespace
    first_role = cqs.spec.template.cliques[0].name
    if policy_ == SubdomainPolicy.SHARED:
        subdomain = labels.set_service_name(name)
        leader = labels.shared_pod_address(first_role, 0, name, gang, ns)
    else:
        subdomain = labels.gang_service_name(name, gang)
        leader = labels.pod_address(first_role, 0, name, gang, ns)
    return {
        labels.ANNOTATION_SUBDOMAIN: subdomain,
        labels.ANNOTATION_LEADER_ADDRESS: leader,
        labels.ANNOTATION_SUBDOMAIN_POLICY: policy_,
    }


def member_annotations(
    cqs: CliqueSet,
    gang: int,
    layout: dict[str, str],
    lay: scaling.Layout,
    member: scaling.Member,
) -> dict[str, str]:
    """The layout annotations of one member of a gang of a set with scaling groups: the
    gang's subdomain and policy (`layout`), and its leader: pod 0 of its instance's first
    clique for a member of a group, else the gang's leader (`scaling.leader_role`). A set
    without groups (or a gang without a Service) keeps `layout` as it is."""
    subdomain = layout.get(labels.ANNOTATION_SUBDOMAIN)
    if not lay.groups or not subdomain:
        return layout
    instance: int | None
    if member.instance is not None:
        role, instance = scaling.instance_leader(lay, member.group), member.instance
    else:
        role, grouped = scaling.leader_role(lay)
        instance = 0 if grouped else None
    name, ns = cqs.metadata.name, cqs.metadata.namespace
    if layout.get(labels.ANNOTATION_SUBDOMAIN_POLICY) == SubdomainPolicy.SHARED:
        leader = labels.shared_pod_address(role, 0, name, gang, ns, instance)
    else:
        leader = labels.pod_address(role, 0, name, gang, ns, instance)
    return {**layout, labels.ANNOTATION_LEADER_ADDRESS: leader}


def gang_annotations(siblings: Iterable[Clique]) -> dict[str, str] | None:
    """The layout annotations of an existing gang, from its live Cliques (the lowest-named
    one), for a Clique added to it; None for a gang without live Cliques."""
    live = sorted(_live(siblings), key=lambda c: c.metadata.name)
    if not live:
        return None
    ann = live[0].metadata.annotations
    return {k: ann[k] for k in LAYOUT_ANNOTATIONS if k in ann}


def wanted_services(
    cqs: CliqueSet,
    recorded: Sequence[tuple[bool, tuple[str, ...]]],
    policy_: str | Callable[[], str],
) -> dict[str, int | None]:
    """Service name -> its gang (None for the shared Service): the subdomains the live
    Cliques of the gangs `0..replicas-1` record, and the Service of each gang not created
    yet. `recorded[gang]` is (whether a Clique of the gang is not being deleted, the
    subdomains its live Cliques record), for every gang below `replicas`. Only names this
    CliqueSet can own count (its own name, or `<set>-<gang>` of the gang recording it): a
    Clique annotation is never a way to make the operator create an arbitrary Service.
    Empty without `headlessService`. `policy_` (the policy of new gangs, `policy`) may be
    a function, asked only when a gang is new: finding the policy may read every Clique."""
    spec = cqs.spec
    if not spec.headless_service:
        return {}
    name = cqs.metadata.name
    shared = labels.set_service_name(name)
    want: dict[str, int | None] = {}
    new_gangs = False
    if spec.replicas > 0:
        labels.gang_service_name(name, spec.replicas - 1)  # the longest: all are valid
    for gang, (live, subs) in enumerate(recorded[: spec.replicas]):
        for sub in subs:
            if sub == shared:
                want[sub] = None
            elif sub == f"{name}-{gang}":
                want[sub] = gang
        if not live:
            new_gangs = True
            if not isinstance(policy_, str):
                policy_ = policy_()
            if policy_ != SubdomainPolicy.SHARED:
                want[f"{name}-{gang}"] = gang
    if new_gangs and policy_ == SubdomainPolicy.SHARED:
        want[shared] = None
    return want


def recorded_subdomains(cliques: Iterable[Clique]) -> tuple[bool, tuple[str, ...]]:
    """(whether one of a gang's `cliques` is not being deleted, the subdomains its live
    Cliques record): one gang's entry of `wanted_services`' `recorded`."""
    live = _live(cliques)
    subs: list[str] = []
    for c in live:
        sub = c.metadata.annotations.get(labels.ANNOTATION_SUBDOMAIN, "")
        if sub and sub not in subs:
            subs.append(sub)
    return bool(live), tuple(subs)
