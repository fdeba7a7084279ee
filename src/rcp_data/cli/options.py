"""Options several commands share, declared and read in one place."""

from __future__ import annotations

import argparse
from pathlib import Path

from rcp_data.core.errors import UsageError


def add_source_option(parser: argparse.ArgumentParser, when: str = "") -> None:
    """``--source-option KEY=VALUE`` (repeatable): passed to the suite's source reader."""
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help=f"option passed to the suite's source reader (repeatable{when})")


def source_options(args: argparse.Namespace) -> dict[str, str]:
    """The ``--source-option`` values as a dict; a value without ``=`` is a usage error."""
    options = {}
    for item in args.source_option:
        if "=" not in item:
            raise UsageError(f"--source-option expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        options[key] = value
    return options


def add_without_positives_option(parser: argparse.ArgumentParser) -> None:
    """``--queries-without-positives skip|zero``: qrel-nDCG's convention for such queries."""
    from rcp_data.core.rules import DEFAULT_WITHOUT_POSITIVES, WITHOUT_POSITIVES

    parser.add_argument(
        "--queries-without-positives", choices=WITHOUT_POSITIVES,
        default=DEFAULT_WITHOUT_POSITIVES, dest="without_positives",
        help="qrel-nDCG of a query without a positive label: skip leaves it out of the means "
        "(the paper's and the card's, the default); zero counts it, with 0 where no document "
        "has a grade above 0 (what mteb's ndcg_at_k does). RCP-nDCG counts every query either way")


def out_folder(text: str) -> Path:
    """An ``--out`` that names a folder: ``-`` (stdout elsewhere) cannot be one."""
    if text == "-":
        raise argparse.ArgumentTypeError(
            "'-' is stdout, and this command writes a folder of files; name a folder")
    return Path(text)


def record_path(text: str) -> Path:
    """A ``--record-to``: a history file updated in place, or its folder; never ``-``."""
    if text == "-":
        raise argparse.ArgumentTypeError(
            "'-' is stdout, and a record is a history file updated in place; name a folder or "
            "a .json file")
    return Path(text)


def dataset_revision(dataset: str | None, repo: str | None, revision: str | None
                     ) -> tuple[str, str]:
    """(repo, revision) from ``hf://datasets/OWNER/NAME@REV`` or its aliases ``--repo`` and
    ``--revision`` (default main)."""
    from rcp_data.core.hub_client import parse_hf_path

    if dataset is not None:
        if repo or revision:
            raise UsageError("name the dataset once: hf://datasets/OWNER/NAME@REV, or --repo "
                             "and --revision")
        parsed = parse_hf_path(dataset)
        if parsed is None:
            raise UsageError(f"expected hf://datasets/OWNER/NAME@REV, got {dataset!r}")
        return parsed
    if not repo:
        raise UsageError("name the dataset: hf://datasets/OWNER/NAME@REV (or --repo OWNER/NAME "
                         "--revision REV)")
    return repo, revision or "main"
