"""Write the table of the operator's labels and annotations into docs/operator.md.

The table is generated from the one declaration of them, `cliques.api.labels.NAMES`
(each key, the objects that carry it, what it says, the modules that write and read it),
between the markers `<!-- names:begin -->` and `<!-- names:end -->`, and never edited by
hand.

    python scripts/gen_names_table.py                    # print the table
    python scripts/gen_names_table.py --write            # write it into docs/operator.md
    python scripts/gen_names_table.py --check-committed  # exit 1 if docs/operator.md is stale

`make lint` runs `--check-committed`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "operator.md"
BEGIN = "<!-- names:begin -->"
END = "<!-- names:end -->"

sys.path.insert(0, str(ROOT / "python"))

from cliques.api import labels  # noqa: E402


def _modules(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "-"


def table() -> str:
    """The markdown table of `labels.NAMES`, in the order declared."""
    rows = [
        "| Key | Kind | On | Meaning | Written by | Read by |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n in labels.NAMES:
        meaning = n.meaning.replace("|", "\\|")
        rows.append(
            f"| `{n.key}` | {n.kind} | {', '.join(n.on)} | {meaning} | "
            f"{_modules(n.writers)} | {_modules(n.readers)} |"
        )
    return "\n".join(rows) + "\n"


def render(doc: str) -> str:
    """`doc` with the table between its markers replaced by the current one."""
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    return doc[:start] + "\n" + table() + doc[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write it into docs/operator.md")
    mode.add_argument(
        "--check-committed", action="store_true", help="exit 1 if docs/operator.md is stale"
    )
    args = parser.parse_args(argv)
    if not (args.write or args.check_committed):
        sys.stdout.write(table())
        return 0
    doc = DOC.read_text()
    wanted = render(doc)
    if args.write:
        DOC.write_text(wanted)
        return 0
    if wanted != doc:
        print(
            f"{DOC.relative_to(ROOT)}: the labels and annotations table does not match "
            "cliques.api.labels.NAMES: run python scripts/gen_names_table.py --write",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
