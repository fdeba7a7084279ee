"""A TREC run's tag (its sixth field), told from the bytes the run is read from: the readers
hand it on with the rows, so no file is decompressed twice to name its run."""

from __future__ import annotations

TAG_FIELD = 5                                    # 0-based: qid Q0 docid rank score TAG


def tag_of(data: bytes) -> str | None:
    """The one tag of every line of a TREC run's (decompressed) bytes, or None where lines
    differ, a line has no sixth field, or the data is empty or the tag is not UTF-8. Mostly
    two counts over the bytes (NIST's tabs, then spaces); a line-by-line look only where
    those do not settle it."""
    end = data.find(b"\n")
    fields = (data if end < 0 else data[:end]).split()
    if len(fields) <= TAG_FIELD:
        return None
    tag = fields[-1]
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    body = data if data.endswith(b"\n") else data + b"\n"
    tagged = body.count(b"\t" + tag + b"\n")
    if tagged != lines:
        tagged += body.count(b" " + tag + b"\n")
    if tagged != lines:
        tags = {parts[-1] if len(parts) > TAG_FIELD else None
                for parts in (line.split() for line in body.splitlines()) if parts}
        if tags != {tag}:
            return None
    try:
        return tag.decode("utf-8")
    except UnicodeDecodeError:
        return None


__all__ = ["TAG_FIELD", "tag_of"]
