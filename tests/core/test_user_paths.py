"""No message names a temporary of an atomic write: ``as_user_sees`` names each as the file or
folder it becomes, and the CLI's log handler applies it to every line."""

from __future__ import annotations

import argparse
import logging
import os

from rcp_data.core.io import as_user_sees, atomic_dir


def test_a_temporary_is_named_as_what_it_becomes(tmp_path):
    target = tmp_path / "release-v2"
    with atomic_dir(target) as tmp:
        inner = tmp / "README.md"
        assert as_user_sees(f"wrote {inner} (12 bytes)") == f"wrote {target / 'README.md'} (12 bytes)"
        assert tmp.name.startswith(".release-v2.tmp-")
    # nested: a release folder written inside a demo folder being written
    nested = f"/w/.demo-out.tmp-{os.getpid()}-0a1b2c3d/.release-v2.tmp-7-deadbeef/README.md"
    assert as_user_sees(f"into {nested}: x") == "into /w/demo-out/release-v2/README.md: x"
    # a temporary file with a suffix, relative paths, quotes
    assert as_user_sees("'.x.parquet.tmp-1-abcd1234.parquet'") == "'x.parquet'"
    # what is not a temporary name stays as it is
    for text in ("a.b.tmp-1-abcd1234", ".b.tmp-1-abcd12345", "no paths here", ".tmp-1-abcd1234"):
        assert as_user_sees(text) == text


def test_the_cli_log_handler_names_no_temporary(tmp_path, capsys):
    from rcp_data.cli.output import configure

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers = []     # as in a fresh process (pytest's own capture handler set aside)
    try:
        configure(argparse.Namespace(verbose=False, quiet=False))
        with atomic_dir(tmp_path / "out") as tmp:
            logging.getLogger("rcp_data.test").warning("could not read %s", tmp / "a.json")
        err = capsys.readouterr().err
    finally:
        root.handlers = saved[0]
        root.setLevel(saved[1])
    assert err == f"WARNING rcp_data.test: could not read {tmp_path / 'out' / 'a.json'}\n"
