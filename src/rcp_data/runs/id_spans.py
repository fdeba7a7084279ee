"""A column of ids as byte spans of one buffer, for vectorised equality, look-up and order.

An id is ``buf[start:end]`` (UTF-8). :meth:`IdSpans.words` packs each id into little-endian
uint64 words (zero past its end), so two ids are equal exactly when their lengths and words are;
:meth:`IdSpans.fingerprint` mixes them into one uint64 (equal ids, equal fingerprints; a repeat
of fingerprints is then confirmed on the words); :meth:`IdSpans.byte_rank` orders ids byte-wise
(strcmp) from big-endian words. No Python object is made per id.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

PAD = 8                                    # zero bytes after the data: a word read stays inside
_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)
_ODD = np.array([0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                 0xA0761D6478BD642F, 0xE7037ED1A0B428DB, 0x8EBC6AF09C88C6E3], dtype=np.uint64)


def padded(data: bytes | np.ndarray) -> np.ndarray:
    """``data`` as uint8 with :data:`PAD` zero bytes after it (read-only for bytes)."""
    if isinstance(data, bytes):
        return np.frombuffer(data + bytes(PAD), dtype=np.uint8)
    raw = np.asarray(data, dtype=np.uint8)
    out = np.zeros(len(raw) + PAD, dtype=np.uint8)
    out[:len(raw)] = raw
    return out


def mix(h: np.ndarray) -> np.ndarray:
    """A uint64 finaliser (splitmix64's): spreads every input bit over the output."""
    h = h ^ (h >> np.uint64(30))
    h = h * _MIX2
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@dataclass(frozen=True)
class IdSpans:
    """Ids ``buf[starts[i]:ends[i]]``; ``buf`` ends in :data:`PAD` zero bytes."""

    buf: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    @classmethod
    def from_arrow(cls, column: pa.Array | pa.ChunkedArray) -> IdSpans:
        """The spans of an Arrow string (or binary) column without nulls."""
        import pyarrow as pa

        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
            off_type = np.int64
        else:
            arr = arr.cast(pa.binary()) if not pa.types.is_binary(arr.type) else arr
            off_type = np.int32
        _, offsets, data = arr.buffers()[:3]
        n = len(arr)
        off = np.frombuffer(offsets, dtype=off_type)[arr.offset:arr.offset + n + 1] \
            if offsets is not None else np.zeros(n + 1, dtype=off_type)
        raw = np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else \
            np.zeros(0, dtype=np.uint8)
        return cls(padded(raw), off[:-1].astype(np.int64), off[1:].astype(np.int64))

    @classmethod
    def of(cls, ids: list[str] | np.ndarray) -> IdSpans:
        """The spans of Python strings (UTF-8)."""
        import pyarrow as pa

        return cls.from_arrow(pa.array(list(map(str, ids)), type=pa.string()))

    @cached_property
    def lengths(self) -> np.ndarray:
        return self.ends - self.starts

    def take(self, index: np.ndarray) -> IdSpans:
        return IdSpans(self.buf, self.starts[index], self.ends[index])

    def words(self, width: int | None = None) -> np.ndarray:
        """``(n, width)`` little-endian uint64 words of each id, zero past its end; ``width``
        defaults to the longest id's."""
        lengths = self.lengths
        longest = int(lengths.max()) if len(lengths) else 0
        width = max(1, -(-longest // 8)) if width is None else width
        # element i of `at` is the 8 bytes from buf[i] (an unaligned view, no copy)
        at = np.ndarray((len(self.buf) - PAD + 1,), dtype="<u8", buffer=self.buf, strides=(1,))
        out = np.empty((len(lengths), width), dtype=np.uint64)
        last = len(self.buf) - PAD
        for j in range(width):
            rest = np.minimum(lengths, 8) if j == 0 else \
                np.minimum(np.maximum(lengths - 8 * j, 0), 8)
            pos = self.starts if j == 0 else np.minimum(self.starts + 8 * j, last)
            np.bitwise_and(at[pos], _MASKS[rest], out=out[:, j])
        return out

    def quick_key(self) -> np.ndarray:
        """One uint64 per id from its length and its first and last eight bytes (two word
        reads, whatever the length): equal ids have equal keys; distinct ids may share one
        (always when longer than 16 bytes and equal but in the middle), so a caller confirms
        a shared key on :meth:`words`."""
        lengths = self.lengths
        at = np.ndarray((len(self.buf) - PAD + 1,), dtype="<u8", buffer=self.buf, strides=(1,))
        key = lengths.astype(np.uint64) * _MIX
        key += (at[self.starts] & _MASKS[np.minimum(lengths, 8)]) * _ODD[0]
        long = lengths > 8
        if long.any():                                   # then end - 8 > start: no mask
            key += np.where(long, at[np.where(long, self.ends - 8, self.starts)], 0) * _ODD[1]
        return key

    def fingerprint(self, words: np.ndarray | None = None) -> np.ndarray:
        """One uint64 per id: equal ids have equal fingerprints, whatever the width of
        ``words`` (the words past an id's end are zero)."""
        words = self.words() if words is None else words
        h = self.lengths.astype(np.uint64) * _MIX
        for j in range(words.shape[1]):
            h += words[:, j] * _ODD[j % len(_ODD)]
        return mix(h)

    def byte_rank(self, words: np.ndarray | None = None) -> np.ndarray:
        """Rank of each id in byte-wise ascending order (strcmp, as
        :func:`rcp_data.scoring.metrics.byte_order_key`); equal ids get distinct ranks."""
        words = self.words() if words is None else words
        big = words.byteswap()
        keys = [self.lengths] + [big[:, j] for j in range(big.shape[1] - 1, -1, -1)]
        order = np.lexsort(keys)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        return rank

    def block_starts(self) -> np.ndarray:
        """The first index of each run of equal consecutive ids."""
        n = len(self)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        words, lengths = self.words(), self.lengths
        new = np.ones(n, dtype=bool)
        new[1:] = (lengths[1:] != lengths[:-1]) | (words[1:] != words[:-1]).any(axis=1)
        return np.flatnonzero(new)

    def text(self, i: int) -> str:
        return bytes(self.buf[self.starts[i]:self.ends[i]]).decode("utf-8", errors="replace")

    def texts(self, index: np.ndarray) -> list[str]:
        """The ids at ``index``: a few decoded from slices of the buffer, many from one copy
        of the bytes they lie in (bytes slice faster than a memoryview does), unless those
        bytes are many more than the ids (a run's block query ids: one id a thousand rows)."""
        starts, ends = self.starts[index], self.ends[index]
        if len(starts) > 64:
            low, high = int(starts.min()), int(ends.max())
            if high - low <= 64 * int((ends - starts).sum()):
                raw = self.buf[low:high].tobytes()
                return [str(raw[s:e], "utf-8", "replace")
                        for s, e in zip((starts - low).tolist(), (ends - low).tolist(),
                                        strict=True)]
        view = memoryview(self.buf)
        return [str(view[s:e], "utf-8", "replace")
                for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]


__all__ = ["PAD", "IdSpans", "mix", "padded"]
