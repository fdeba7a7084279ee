"""The least work a verifying upload does, with no HTTP, no Hub server and no client library: the floor
under ``release publish`` on this machine, measured beside the copy and the publish.

    python bench/transfer_floor.py SRC_DIR DEST_DIR [--streams 5]

The sender hashes every file of SRC_DIR (sha256, on every core: what a publisher must know
before an upload that names objects by their hash), then sends them to a receiver in its own
process over loopback TCP (``socket.sendfile``, ``--streams`` at once, as huggingface_hub uploads
five files at once). The receiver writes each file under DEST_DIR while it hashes it, as the
local Hub stores an LFS object (``rcp_data.hub.objectfile``: whole blocks past the page cache
where the filesystem allows), fsyncs it and answers with its sha256; the sender checks every
answer.
Prints one JSON line: files, bytes, and the seconds of the hashing and of the transfer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import mmap
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rcp_data.core.files import hash_files
from rcp_data.hub.objectfile import ObjectFile

CHUNK = 1 << 20
_HEADER = struct.Struct("!IQ")   # path length, size


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _read_exact(conn: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        got = conn.recv(n - len(data))
        if not got:
            raise ConnectionError("the sender closed the connection early")
        data += got
    return bytes(data)


def _receive_one(conn: socket.socket, dest: Path) -> None:
    with conn:
        name_len, size = _HEADER.unpack(_read_exact(conn, _HEADER.size))
        target = dest / _read_exact(conn, name_len).decode()
        target.parent.mkdir(parents=True, exist_ok=True)
        buf = memoryview(mmap.mmap(-1, CHUNK))   # page-aligned, as direct I/O needs
        digest, done = hashlib.sha256(), 0
        with ObjectFile(target, truncate=True) as sink:   # as the local Hub stores an object
            while done < size:
                want = min(CHUNK, size - done)
                filled = 0
                while filled < want:   # whole pieces, so that they can be written directly
                    n = conn.recv_into(buf[filled:want])
                    if not n:
                        raise ConnectionError(f"{target}: the sender closed the connection early")
                    filled += n
                digest.update(buf[:filled])
                sink.write_at(buf[:filled], done)
                done += filled
            sink.fsync()
        conn.sendall(digest.hexdigest().encode())


def receive(dest: Path, count: int) -> None:
    """Serve ``count`` uploads into ``dest``; print the port first."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        print(server.getsockname()[1], flush=True)
        threads = []
        for _ in range(count):
            conn, _addr = server.accept()
            t = threading.Thread(target=_receive_one, args=(conn, dest))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()


def send(src: Path, dest: Path, streams: int) -> dict:
    names = _files(src)
    t0 = time.perf_counter()
    # on every core, as release publish hashes them
    hashes = {rel: e.sha256 for rel, e in hash_files(src, names).items()}
    hashed = time.perf_counter()
    receiver = subprocess.Popen([sys.executable, __file__, "--receive", str(dest), str(len(names))],
                                stdout=subprocess.PIPE, text=True)
    port = int(receiver.stdout.readline())
    started = time.perf_counter()

    def upload(name: str) -> None:
        path = src / name
        with socket.create_connection(("127.0.0.1", port)) as conn, path.open("rb") as fh:
            encoded = name.encode()
            conn.sendall(_HEADER.pack(len(encoded), os.fstat(fh.fileno()).st_size) + encoded)
            conn.sendfile(fh)
            answer = _read_exact(conn, 64).decode()
        if answer != hashes[name]:
            raise RuntimeError(f"{name}: the receiver hashed {answer}, the sender {hashes[name]}")

    with ThreadPoolExecutor(max_workers=streams) as pool:
        list(pool.map(upload, names))
    if receiver.wait() != 0:
        raise RuntimeError(f"the receiver exited {receiver.returncode}")
    done = time.perf_counter()
    return {"files": len(names), "bytes": sum((src / n).stat().st_size for n in names),
            "hash_seconds": round(hashed - t0, 3),
            "receiver_start_seconds": round(started - hashed, 3),
            "transfer_seconds": round(done - started, 3)}


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--receive":
        receive(Path(sys.argv[2]), int(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--streams", type=int, default=5)
    args = parser.parse_args()
    if args.dest.exists():
        parser.error(f"{args.dest} exists; give a new folder")
    args.dest.mkdir(parents=True)
    print(json.dumps(send(args.src, args.dest, args.streams)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
