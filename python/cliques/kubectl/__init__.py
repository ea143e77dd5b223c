"""`kubectl cliques`: a kubectl plugin that shows a CliqueSet as a person reads it.

    kubectl cliques status SET [-o json]           the tree set -> gangs -> Cliques -> pods,
                                                  and why each gang that is not whole is not
    kubectl cliques diff SET [--revision N] [-o json]
                                                  why it rolled: the first real differences
                                                  between two of its templates
    kubectl cliques rollout history SET [-o json]  its revisions, oldest first
    kubectl cliques rollout undo SET [--to-revision N]
                                                  back to an earlier revision
    kubectl cliques rollout restart SET            every gang made again, rolled under the
                                                  set's updateStrategy (surge first)

`-n/--namespace`, `--context` and `--kubeconfig` work as kubectl's, before or after the
command. The package installs the console script `kubectl-cliques`, which kubectl finds on
PATH; `python -m cliques.kubectl` is the same. Errors are one line on stderr with an exit
code of their own (`exits`). The pure parts: `status` (the tree and its reasons), `diff`
(the comparison), `render` (text and JSON); `fetch` reads the cluster through the
operator's own client.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cliques import __version__
from cliques.kubectl import exits

if TYPE_CHECKING:
    from cliques.kube.client import KubeClient

PROG = "kubectl cliques"


def _common(parser: argparse.ArgumentParser, default: object) -> None:
    """The flags kubectl users type anywhere on the line."""
    parser.add_argument(
        "-n", "--namespace", default=default, help="the namespace (default: the context's)"
    )
    parser.add_argument("--context", default=default, help="the kubeconfig context to use")
    parser.add_argument(
        "--kubeconfig",
        default=default,
        help="the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="See a CliqueSet's gangs and why they are not whole; see why it rolled.",
        epilog=(
            "Exit codes: 0 ok (diff: the same), 1 diff: different, 2 usage, 3 the cluster "
            "cannot be used (kubeconfig, connection), 4 not found, 5 no permission, 6 rollout "
            "undo: the set changed meanwhile, nothing written."
        ),
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    _common(parser, None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Sub-command flags default to SUPPRESS, so a flag given before the command is kept.
    status = sub.add_parser(
        "status",
        help="the set's gangs, Cliques and pods, and why a gang is not whole",
        description=(
            "The tree CliqueSet -> gangs -> Cliques -> pods, a line each, and for each gang "
            "that is not whole, why: the scheduler's message, Kueue admission, claims not "
            "allocated, containers waiting (image pulls), start gates, back-offs, drains."
        ),
    )
    status.add_argument("name", metavar="SET", help="the CliqueSet")
    status.add_argument("-o", "--output", choices=("text", "json"), default="text")
    _common(status, argparse.SUPPRESS)
    diff = sub.add_parser(
        "diff",
        help="why the set rolled: the first real differences between two revisions",
        description=(
            "The first differences, on the canonical form, between two of the set's "
            "templates: while its gangs do not all run spec.template (a roll under way or "
            "pending), what they run against it; else revision N and the newest, where the "
            "set has ControllerRevisions."
        ),
    )
    diff.add_argument("name", metavar="SET", help="the CliqueSet")
    diff.add_argument(
        "--revision",
        type=int,
        metavar="N",
        help="the revision to compare with the newest (default: the one before it)",
    )
    diff.add_argument("-o", "--output", choices=("text", "json"), default="text")
    _common(diff, argparse.SUPPRESS)
    rollout = sub.add_parser(
        "rollout",
        help="the set's revisions (history), the way back to one (undo), a restart",
        description="As `kubectl rollout history|undo|restart` for a Deployment.",
    )
    _common(rollout, argparse.SUPPRESS)
    verbs = rollout.add_subparsers(dest="verb", metavar="VERB", required=True)
    history = verbs.add_parser(
        "history",
        help="every revision of the set, oldest first",
        description=(
            "The revisions the operator recorded for the set (its ControllerRevisions), "
            "oldest first: number, age, each clique's images, the change-cause "
            "(kubernetes.io/change-cause), and which one the set runs now (*)."
        ),
    )
    history.add_argument("name", metavar="SET", help="the CliqueSet")
    history.add_argument("-o", "--output", choices=("text", "json"), default="text")
    _common(history, argparse.SUPPRESS)
    undo = verbs.add_parser(
        "undo",
        help="write an earlier revision back to the set",
        description=(
            "Write revision N (default: the one before the current) back to the set: each "
            "clique's pod template, placement and resourceClaims; gang count, sizes and "
            "the update strategy stay. The operator then rolls the gangs back within "
            "maxUnavailable. An edit made meanwhile is never overwritten (exit 6)."
        ),
    )
    undo.add_argument("name", metavar="SET", help="the CliqueSet")
    undo.add_argument(
        "--to-revision",
        type=int,
        metavar="N",
        help="the revision to go back to (default: the one before the current)",
    )
    _common(undo, argparse.SUPPRESS)
    restart = verbs.add_parser(
        "restart",
        help="make every gang again, rolled as a template change is",
        description=(
            "Stamp every clique's pod template with kubectl.kubernetes.io/restartedAt (the "
            "time), as `kubectl rollout restart` does for a Deployment. The operator then "
            "replaces every gang's pods under the set's updateStrategy: within "
            "maxUnavailable, surge gangs first where maxSurge allows, gangs below partition "
            "kept. An edit made meanwhile is never overwritten (exit 6)."
        ),
    )
    restart.add_argument("name", metavar="SET", help="the CliqueSet")
    _common(restart, argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return exits.USAGE
    try:
        return asyncio.run(_run(args))
    except exits.Failure as exc:
        command = f"{args.command} {args.verb}" if args.command == "rollout" else args.command
        print(f"{PROG} {command}: {exc.message}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


async def _run(args: argparse.Namespace) -> int:
    from cliques.api.meta import format_now
    from cliques.kubectl import diff, fetch, render, status

    ns = fetch.namespace(args.namespace, args.kubeconfig, args.context)
    client = await fetch.connect(args.kubeconfig, args.context)
    if args.command == "rollout":
        async with client:
            return await _rollout(args, client, ns)
    async with client:
        objects = await fetch.read(
            client,
            ns,
            args.name,
            claims=args.command == "status",
            revisions=args.command == "diff",
        )
    if args.command == "status":
        tree = status.build(
            status.Inputs(
                objects.cliqueset,
                objects.cliques,
                objects.pods,
                objects.claims or (),
                now=format_now(),
            )
        )
        lines = (
            [render.dumps(render.status_json(tree))]
            if args.output == "json"
            else render.status_text(tree)
        )
        print("\n".join(lines))
        return exits.OK
    revisions = diff.owned_revisions(objects.cliqueset, objects.revisions or ())
    pending = diff.against_live(objects.cliqueset, objects.cliques, "a change not rolled out")
    if revisions and args.revision is None and not pending.same:
        # The gangs do not all run spec.template yet (a roll under way, or a change the
        # operator has not seen): what they run against what they are asked to.
        report = pending
    elif revisions:
        try:
            report = diff.between_revisions(objects.cliqueset, revisions, args.revision)
        except diff.RevisionError as exc:
            raise exits.Failure(exits.NOT_FOUND, str(exc)) from None
    elif args.revision is not None:
        unread = objects.unread.get("ControllerRevisions")
        raise exits.Failure(
            exits.NOT_FOUND,
            f"CliqueSet {args.name} has no ControllerRevisions"
            + (f" (they are {unread})" if unread else "")
            + "; without --revision, diff compares its live Cliques with its spec.template",
        )
    else:
        unread = objects.unread.get("ControllerRevisions")
        why = f"ControllerRevisions {unread}" if unread else "no ControllerRevisions recorded"
        report = diff.against_live(objects.cliqueset, objects.cliques, why)
    lines = (
        [render.dumps(render.diff_json(report))]
        if args.output == "json"
        else render.diff_text(report)
    )
    print("\n".join(lines))
    return exits.OK if report.same else exits.DIFFERENT


async def _rollout(args: argparse.Namespace, client: KubeClient, ns: str) -> int:
    """`rollout history`, `rollout undo` and `rollout restart`."""
    import datetime as dt

    from cliques.kubectl import fetch, render, rollout
    from cliques.rollout import history as rollout_history

    name = args.name
    if args.verb == "restart":
        from cliques.rollout import restart

        try:
            await fetch.guarded(client, lambda: restart.restart(client, ns, name), ns, name)
        except rollout_history.ConcurrentEdit as exc:
            raise exits.Failure(exits.CONFLICT, str(exc)) from None
        print(f"cliqueset.cliques.dev/{name} restarted")
        return exits.OK
    if args.verb == "history":
        revisions = await fetch.guarded(
            client, lambda: rollout_history.history(client, ns, name), ns, name
        )
        if args.output == "json":
            print(render.dumps(rollout.history_json(name, revisions)))
        else:
            now = dt.datetime.now(dt.UTC)
            print("\n".join(rollout.history_text(name, revisions, now)))
        return exits.OK
    try:
        done = await fetch.guarded(
            client, lambda: rollout_history.undo(client, ns, name, args.to_revision), ns, name
        )
    except rollout_history.RevisionError as exc:
        failure = rollout.undo_failure(exc)
        if failure is not None:
            raise failure from None
        print(f"cliqueset.cliques.dev/{name} skipped rollback ({exc})")
        return exits.OK
    print(f"cliqueset.cliques.dev/{name} rolled back to revision {done.revision}")
    return exits.OK
