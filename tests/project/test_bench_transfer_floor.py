"""``bench/transfer_floor.py``, the floor the publish benchmark compares against, moves every
byte and checks every hash (a floor that skipped work would flatter nothing but itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "transfer_floor.py"


def test_the_transfer_floor_delivers_every_file_intact(tmp_path):
    src = tmp_path / "src"
    files = {"a.parquet": os.urandom(3 << 20), "sub/b.json": b"{}\n", "sub/deeper/c.bin": b""}
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    out = subprocess.run([sys.executable, SCRIPT, src, tmp_path / "dest", "--streams", "2"],
                         capture_output=True, text=True, check=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["files"], result["bytes"]) == (3, sum(map(len, files.values())))
    assert result["hash_seconds"] >= 0 and result["transfer_seconds"] > 0
    assert {name: (tmp_path / "dest" / name).read_bytes() for name in files} == files


def test_the_transfer_floor_never_writes_into_an_existing_folder(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "dest").mkdir()
    out = subprocess.run([sys.executable, SCRIPT, tmp_path / "src", tmp_path / "dest"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "exists" in out.stderr
