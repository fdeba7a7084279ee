"""``rcp-data verify``: integrity, provenance and published numbers of a pinned revision.

``rcp-data verify (--repo OWNER/NAME --revision REV | PATH) [--reference FILE] [--json]
[--cache-dir DIR] [--histories DIR] [--digest D] [--git] [--quick] [--sources
[--source-option K=V ...]]``. Exit 0 when every check holds and a pinned digest, a record or a
full commit sha with ``--git`` anchors a Hub revision,
1 when a check failed (a malformed file included), 2 when the verification could not run (the
Hub unreachable, an unknown repo or revision, a missing path or --histories folder), 3 when
every check holds but nothing outside the repository anchors the revision.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rcp_data.cli.options import add_source_option, source_options
from rcp_data.core.errors import RcpDataError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "verify",
        help="verify a pinned release: integrity, releases.json, card tables, paper numbers",
        description="Resolve the revision to its commit sha (a tag must agree with "
        "provenance/releases.json at that commit), download strictly by sha, prove every file "
        "against the build manifest's sizes and sha256, check the Hub's commits and tags behind "
        "the revision, check the data's integrity and the judge provenance, replay "
        "provenance-runs under both tie rules and compare with the card's tables (and with the "
        "paper's numbers when this is the release the paper used; otherwise the differences are "
        "a diff, not a failure), and render the card and task file again (byte equality). "
        "Writes nothing to the Hub and nothing outside the download cache, but for a local "
        "directory that passes a receipt of its bytes in $RCP_DATA_CACHE (else "
        "~/.cache/rcp-data), which 'release publish' of the same bytes uses instead of "
        "repeating the checks. Every downloaded file must be the file the Hub lists for the "
        "commit (git blob id or LFS sha256), and the release's content digest is printed; a "
        "Hub revision is anchored by --digest, or by a record of the release (the packaged "
        "release/, --histories). Exit 0 all hold and anchored, 1 a check failed (a malformed "
        "file included), 2 could not run, 3 all hold but not anchored (\"consistent, not "
        "anchored\").",
    )
    p.add_argument("path", nargs="?", default=None,
                   help="a local release directory or hf://datasets/OWNER/NAME@REV")
    p.add_argument("--repo", default=None, help="dataset repo OWNER/NAME on the Hub (with "
                   "--revision: an alias of hf://datasets/OWNER/NAME@REV)")
    p.add_argument("--revision", default=None, help="tag, branch or commit sha, 7+ hex (with --repo)")
    p.add_argument("--reference", type=Path, default=None,
                   help="the paper's numbers (default: the project's provenance/paper_values.json)")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="download cache (default: the Hugging Face cache, $HF_HOME)")
    p.add_argument("--histories", type=Path, default=None,
                   help="folder of release records (<suite>.json, as publish --record-to writes) "
                   "the Hub's tags are checked against besides the project's packaged release/; "
                   "also the record of a revision that carries no releases.json")
    p.add_argument("--digest", metavar="D", default=None,
                   help="the release's content digest (as 'release publish' prints and records "
                   "it): the bytes must give exactly D, as pip's --hash pins a wheel")
    p.add_argument("--git", action="store_true",
                   help="also fetch the commit over git's smart HTTP (as git clone reads it) "
                   "into a private temporary repository: git recomputes every object id from "
                   "the bytes, and every file verified must be the commit's tree (blob id, or "
                   "LFS pointer sha256 and size). A --revision given as a full 40-hex commit "
                   "sha is then anchored by that sha. Exit 2 when the Hub does not serve git")
    p.add_argument("--quick", action="store_true",
                   help="a corpus file whose LFS sha256 as the Hub lists it is the manifest's "
                   "is not downloaded (its ids are read remotely); every file downloaded is "
                   "still hashed. The default downloads and hashes every file")
    p.add_argument("--sources", action="store_true",
                   help="also compare queries, qrels, exclusions and corpus texts with the "
                   "upstream source, where the suite's reader can read it here")
    add_source_option(p, "; with --sources")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from rcp_data.checks.reports import VERIFY_SCHEMA
    from rcp_data.checks.verify import verify

    try:
        options = source_options(args)
        report = verify(repo=args.repo, revision=args.revision, path=args.path,
                        reference=args.reference, histories=args.histories,
                        client=args.hub_client, quick=args.quick, sources=args.sources,
                        source_options=options, digest=args.digest, git=args.git)
    except RcpDataError as exc:
        if not args.json:
            raise
        json.dump({"schema": VERIFY_SCHEMA, "ok": False, "exit_code": exc.exit_code,
                   "error": exc.message}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return exc.exit_code
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(report.text())
    return report.exit_code
