"""ir_datasets' own MS MARCO repair (``FixEncoding``): the reference that
:mod:`rcp_data.sources.text_repair` must equal. It runs ir_datasets' code on the bytes of an
``id<TAB>text`` collection file; tests and ``bench/repair.py`` compare against it. Test-only: it
is not part of the package."""

from __future__ import annotations

import contextlib
import io


class _BytesStreamer:
    """The one method ``FixEncoding`` calls on its source: ``stream()``."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    @contextlib.contextmanager
    def stream(self):
        yield io.BytesIO(self._data)


def irds_repair_bytes(data: bytes) -> bytes:
    """ir_datasets' repair of a whole collection file's bytes."""
    from ir_datasets.datasets.msmarco_passage import FixEncoding

    return b"".join(FixEncoding(_BytesStreamer(data)))


def irds_repair(texts: list[str]) -> list[str]:
    """ir_datasets' repair of each text (as lines ``i<TAB>text`` of a collection file)."""
    data = "".join(f"{i}\t{t}\n" for i, t in enumerate(texts)).encode()
    lines = irds_repair_bytes(data).decode("utf-8").split("\n")
    if lines[-1] != "":
        raise ValueError("ir_datasets' repair did not end with a newline")
    return [line.split("\t", 1)[1] for line in lines[:-1]]
