"""The floor of the operator's memory at a shape, measured: what its informer caches hold.

`cliques bench sim-scale` reports the peak RSS of a deploy of up to 100,000 pods run by
the real controllers against a simulated API server, in one process that also holds what
the simulated server stores. Whatever the controllers keep besides, an operator that
watches these objects keeps each of them decoded in its informer caches until it is
deleted. This script measures that part alone, with no controller running:

1. It deploys a small slice of the shape (`--slice`, the same gangs and pods per set, at
   most 10 sets) with `simscale.deploy`, and takes the objects the simulated server
   stores once every set is available: CliqueSets, Cliques, pods (bound, Ready, their
   statuses written by the fake kubelets), Services and ControllerRevisions, byte for byte
   as the informers receive them.
2. It copies that slice into as many namespaces as the shape has slices (each copy with
   its own namespace and uids), so the bytes are those of the whole shape.
3. It decodes every object as `cliques operator`'s informers do: the types, transforms
   (shared pod parts, shared templates) and indexers the two controllers' `WATCHES`
   declare, into the production `Store`, and measures the process's resident memory
   before and after (`/proc/self/statm`), then the same by kind with `tracemalloc`.
4. For comparison, the least any cache of these objects can keep: each object's
   identity, resourceVersion, labels and owner (`Identity` below), decoded the same way.

Also measured: the resident memory of a Python process that has imported the operator
(`cliques.operator` with its controllers), before any cache fills. The sum of that and
the caches is a floor under the operator's RSS at the shape; against it, the peak RSS of
`bench sim-scale` less the simulated server's share.

    .venv/bin/python bench/cache-floor/run.py --shape 1000x50x2
    .venv/bin/python bench/cache-floor/run.py --shape 1x5000x20 --slice 1x500x20
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from cliques.controllers.clique.controller import CliqueController
from cliques.controllers.cliqueset.controller import CliqueSetController
from cliques.kube import store, watches
from cliques.kube.gangapi import GangAPI
from cliques.operator import process
from cliques_lab.bench import simscale, workload

RESULTS = Path(__file__).resolve().parents[1] / "results"
PAGE = os.sysconf("SC_PAGE_SIZE")


class Owner(msgspec.Struct, rename="camel"):
    uid: str = ""


class IdentityMeta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    owner_references: list[Owner] = msgspec.field(default_factory=list)


class Identity(msgspec.Struct):
    """The least a cache of an object can keep: who it is, its version, labels, owner."""

    metadata: IdentityMeta = msgspec.field(default_factory=IdentityMeta)


def resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def harvest(shape: workload.Shape) -> dict[str, list[bytes]]:
    """What the simulated server stores once `shape` is deployed, by kind."""
    kept: dict[str, list[bytes]] = {}

    def done(server: simscale.SimServer) -> None:
        for kind, objs in server.objects.items():
            kept[kind] = list(objs.values())

    simscale.deploy(shape, on_done=done)
    return kept


def copied(objs: dict[str, list[bytes]], copies: int) -> dict[str, list[bytes]]:
    """`copies` copies of every object, each copy in a namespace of its own, uids apart."""
    out: dict[str, list[bytes]] = {kind: [] for kind in objs}
    for kind, raws in objs.items():
        bodies = [msgspec.json.decode(raw) for raw in raws]
        for c in range(copies):
            for body in bodies:
                meta = body["metadata"]
                ns, uid = meta.get("namespace", ""), meta.get("uid", "")
                meta["namespace"] = f"{ns}-{c}"
                meta["uid"] = f"{uid}-{c}"
                owners = meta.get("ownerReferences") or []
                for ref in owners:
                    ref["uid"] = f"{ref['uid']}-{c}"
                out[kind].append(msgspec.json.encode(body))
                meta["namespace"], meta["uid"] = ns, uid
                for ref in owners:
                    ref["uid"] = ref["uid"].rsplit("-", 1)[0]
    return out


def decoders() -> dict[str, tuple[Callable[[bytes], Any], dict[str, Any]]]:
    """Kind -> (decode as the operator's informer does, its indexers)."""
    out: dict[str, tuple[Callable[[bytes], Any], dict[str, Any]]] = {}
    api = GangAPI("")
    for watch in watches.merge(
        w for c in (CliqueSetController, CliqueController) for w in c.WATCHES
    ):
        res = watch.served(api)
        if res is None:
            continue
        decode = msgspec.json.Decoder(watch.kind).decode
        transform = watch.transform() if watch.transform is not None else None

        def typed(raw: bytes, d: Any = decode, t: Any = transform) -> Any:
            obj = d(raw)
            return t(obj) if t is not None else obj

        out[res.kind] = (typed, dict(watch.indexers))
    return out


def filled(objs: dict[str, list[bytes]], identity: bool) -> dict[str, Any]:
    """Every object decoded into a store of its kind (the informers' or identities)."""
    stores: dict[str, Any] = {}
    for kind, (typed, indexers) in decoders().items():
        raws = objs.get(kind, [])
        if identity:
            decode = msgspec.json.Decoder(Identity).decode
            stores[kind] = {(o.metadata.namespace, o.metadata.name): o for o in map(decode, raws)}
        else:
            s: store.Store[Any] = store.Store(indexers)
            for raw in raws:
                s.upsert(typed(raw))
            stores[kind] = s
    return stores


def by_kind(objs: dict[str, list[bytes]], identity: bool) -> dict[str, float]:
    """MiB allocated and kept per kind (`tracemalloc`), the stores filled kind by kind."""
    out: dict[str, float] = {}
    tracemalloc.start()
    keep = []
    for kind in decoders():
        before = tracemalloc.get_traced_memory()[0]
        keep.append(filled({kind: objs.get(kind, [])}, identity))
        gc.collect()
        out[kind] = (tracemalloc.get_traced_memory()[0] - before) / 2**20
    tracemalloc.stop()
    del keep
    return out


def operator_at_rest() -> float:
    """RSS MiB of a fresh Python process that has imported the operator."""
    code = (
        "import cliques.operator.manager, cliques.controllers.cliqueset.controller, "
        "cliques.controllers.clique.controller, uvloop\n"
        f"print(int(open('/proc/self/statm').read().split()[1]) * {PAGE} / 2**20)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="1000x50x2", help="SETSxGANGSxPODS (default 1000x50x2)")
    ap.add_argument("--slice", help="the slice deployed and copied (default: up to 10 sets)")
    ap.add_argument("--out", help="result JSON (default bench/results/cache-floor-…json)")
    args = ap.parse_args(argv)
    shape = workload.Shape.parse(args.shape)
    part = workload.Shape.parse(args.slice) if args.slice else None
    if part is None:
        part = workload.Shape.parse(f"{min(shape.sets, 10)}x{shape.gangs}x{shape.pods}")
    if (part.gangs, part.pods) != (shape.gangs, shape.pods) or shape.sets % part.sets:
        ap.error(f"--slice {part} must divide --shape {shape} by sets, same gangs and pods")
    copies = shape.sets // part.sets
    t0 = time.monotonic()
    print(f"deploying {part} in the simulator ...", flush=True)
    objs = copied(harvest(part), copies)
    counts = {kind: len(raws) for kind, raws in objs.items()}
    stored = sum(len(r) for raws in objs.values() for r in raws) / 2**20
    print(f"{copies} copies: " + ", ".join(f"{n:,} {k}" for k, n in counts.items()), flush=True)
    process.tune_gc()
    gc.collect()
    before = resident_mib()
    stores = filled(objs, identity=False)
    gc.collect()
    cache_rss = resident_mib() - before
    del stores
    gc.collect()
    print(f"informer caches: +{cache_rss:.0f} MiB resident; by kind (tracemalloc) ...", flush=True)
    informers = by_kind(objs, identity=False)
    identities = by_kind(objs, identity=True)
    rest = operator_at_rest()
    result = {
        "shape": str(shape),
        "slice": str(part),
        "objects": counts,
        "stored_json_mib": round(stored, 1),
        "operator_at_rest_mib": round(rest, 1),
        "informer_caches_resident_mib": round(cache_rss, 1),
        "informer_caches_mib_by_kind": {k: round(v, 1) for k, v in informers.items()},
        "identity_only_mib_by_kind": {k: round(v, 1) for k, v in identities.items()},
        "floor_mib": round(rest + sum(informers.values()), 1),
        "identity_floor_mib": round(rest + sum(identities.values()), 1),
        "python": sys.version.split()[0],
        "seconds": round(time.monotonic() - t0, 1),
    }
    print(f"\n{'kind':<22}{'objects':>10}{'cached MiB':>12}{'B/object':>10}{'identity MiB':>14}")
    for kind, mib in informers.items():
        n = counts.get(kind, 0)
        per = mib * 2**20 / n if n else 0
        print(f"{kind:<22}{n:>10,}{mib:>12.1f}{per:>10.0f}{identities[kind]:>14.1f}")
    print(f"\noperator process at rest: {rest:.0f} MiB resident")
    print(f"floor (at rest + informer caches): {result['floor_mib']:.0f} MiB")
    least = result["identity_floor_mib"]
    print(f"identity floor (at rest + identity and labels only): {least:.0f} MiB")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else RESULTS / f"cache-floor-{shape}-{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
