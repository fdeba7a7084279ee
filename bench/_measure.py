"""Stages of a benchmark run as subprocesses: wall time and peak RSS of each.

A stage is a command line. It runs as a child process; ``os.wait4`` returns that child's
resource usage, whose ``ru_maxrss`` is its peak resident set (VmHWM) in KiB on Linux. A server
that is stopped rather than waited for is measured from ``/proc/<pid>/status`` (VmHWM) just
before it is stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

GIB = 1 << 30
MIB = 1 << 20


@dataclass
class Stage:
    """One measured stage."""

    name: str
    seconds: float
    peak_rss: int                 # bytes
    rc: int
    cpu_seconds: float = 0.0      # user + system: what the stage costs without other load
    load: float = 0.0             # the machine's 1-minute load average when it ended
    peak_anon: int = 0            # bytes: peak of RssAnon, sampled (VmHWM also counts mapped
                                  # files, e.g. the datasets cache, which the kernel can drop)
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.rc == 0


def run_stage(name: str, argv: Sequence[str], *, env: dict | None = None,
              log_dir: Path, cwd: Path | None = None) -> Stage:
    """Run ``argv`` to completion; stdout and stderr go to ``log_dir/<name>.log``."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    print(f"[{time.strftime('%H:%M:%S')}] stage {name}: {' '.join(map(str, argv))}", flush=True)
    with log.open("wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(map(str, argv)), stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd)
        anon = _AnonSampler(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        anon.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    stage = Stage(name, seconds, usage.ru_maxrss * 1024, proc.returncode,
                  usage.ru_utime + usage.ru_stime, os.getloadavg()[0], anon.peak)
    print(f"[{time.strftime('%H:%M:%S')}] stage {name}: {_fmt_s(seconds)} ({_fmt_s(stage.cpu_seconds)}"
          f" CPU), peak RSS {_fmt_b(stage.peak_rss)}, load {stage.load:.1f}, exit {stage.rc}",
          flush=True)
    if not stage.ok:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        print("\n".join(f"    {line}" for line in tail), file=sys.stderr)
    return stage


class _AnonSampler:
    """The peak of a process's anonymous resident memory (RssAnon), sampled twice a second."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid, self.peak = pid, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.5):
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("RssAnon:"):
                        self.peak = max(self.peak, int(line.split()[1]) * 1024)
            except OSError:
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def vm_hwm(pid: int) -> int:
    """Peak resident set of a running process (bytes), from /proc; 0 if unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``rcp-data hub serve`` in a child process, measured by VmHWM when stopped."""

    def __init__(self, python: str, root: Path, env: dict, log_dir: Path,
                 src: Path | None = None) -> None:
        self.port = free_port()
        if src is not None:  # serve with another checkout's local Hub (e.g. a branch's)
            env = {**env, "PYTHONPATH": str(src)}
        self.url = f"http://127.0.0.1:{self.port}"
        log_dir.mkdir(parents=True, exist_ok=True)
        self._log = (log_dir / "hub-server.log").open("wb")
        self.proc = subprocess.Popen(
            [python, "-m", "rcp_data", "-v", "hub", "serve", "--root", str(root), "--port",
             str(self.port)], stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    # the token writes need, generated into the root (an older local Hub: none)
                    token_file = Path(root) / ".hub-token"
                    self.token = token_file.read_text().strip() if token_file.is_file() else ""
                    return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the local Hub exited ({self.proc.returncode})")
            time.sleep(0.2)
        raise RuntimeError("the local Hub did not start within 60 s")

    def peak_rss(self) -> int:
        return vm_hwm(self.proc.pid)

    def stop(self) -> int:
        peak = self.peak_rss()
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
        return peak


def tree_bytes(root: Path) -> tuple[int, int]:
    """``(files, bytes)`` under ``root`` (symbolic links followed)."""
    n = size = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            n += 1
            size += os.stat(os.path.join(dirpath, f)).st_size
    return n, size


def add_run_arguments(p, seed: int) -> None:
    """The options every full-size benchmark takes (``build_trecdl``, ``build_vidore``)."""
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temp one)")
    p.add_argument("--keep", action="store_true", help="keep the work folder; reuse its inputs")
    p.add_argument("--seed", type=int, default=seed)
    p.add_argument("--skip", default="", help="comma-separated measured stages to skip "
                   "(build: reuse the work folder's release; publish: verify the folder; "
                   "reverify: no second publish with --reverify; floor: no transfer floor)")
    p.add_argument("--hub-src", type=Path, default=None,
                   help="serve the local Hub from this src folder (another checkout's, e.g. a "
                   "branch with the Hub's LFS support); default: this one")
    p.add_argument("--against", type=Path, default=None,
                   help="results.json of a run at another scale: extrapolate through both")


def copy_tree(src: Path, dst: Path) -> None:
    """The baseline of a publish: the same bytes copied on the same disk."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    os.sync()


def release_stages(python: str, release: Path, repo: str, work: Path, env: dict,
                   log_dir: Path, skip: set[str], hub_src: Path | None = None) -> list[Stage]:
    """The release folder copied (the publish baseline), published to a local Hub in its own
    process (served from ``hub_src`` when given: another checkout's ``src``), and verified by
    tag into an empty Hugging Face cache."""

    stages: list[Stage] = []
    n_files, n_bytes = tree_bytes(release)
    # the copy is cheap and its speed varies with the disk's writeback: the median of three
    copies = sorted((run_stage("copy", [python, "-c", "import sys, pathlib, _measure; "
                                        "_measure.copy_tree(*map(pathlib.Path, sys.argv[1:]))",
                                        release, work / "release-copy"],
                               env={**env, "PYTHONPATH": f"{env.get('PYTHONPATH', '')}:"
                                                         f"{Path(__file__).parent}"},
                               log_dir=log_dir) for _ in range(3)), key=lambda st: st.seconds)
    copy = copies[1]
    copy.extra = {"files": n_files, "bytes": n_bytes,
                  "copy_seconds_all": [round(st.seconds, 3) for st in copies]}
    copy.note = (f"{n_files} files, {n_bytes / MIB:,.0f} MiB at {n_bytes / copy.seconds / MIB:,.0f}"
                 f" MiB/s (median of 3: {', '.join(f'{st.seconds:.1f}' for st in copies)} s)")
    stages.append(copy)
    shutil.rmtree(work / "release-copy", ignore_errors=True)
    if "floor" not in skip:
        stages.append(transfer_floor(python, release, work, env, log_dir, copy))
    if "publish" in skip:  # no Hub: verify the folder itself (no download)
        if "verify" not in skip:
            ver = run_stage("verify", [python, "-m", "rcp_data", "verify", release], env=env,
                            log_dir=log_dir)
            ver.note = "the local folder (publish skipped: no download measured)"
            stages.append(ver)
        return stages
    # a maintainer's order: verify the folder, then publish it. The publish hashes every file
    # again and finds the receipt of that verification (rcp_data.checks.receipts); the same
    # publish with --reverify, into a second empty Hub, runs every check again.
    cache = work / "rcp-data-cache"
    shutil.rmtree(cache, ignore_errors=True)
    env = {**env, "RCP_DATA_CACHE": str(cache)}
    local = run_stage("verify-local", [python, "-m", "rcp_data", "verify", release], env=env,
                      log_dir=log_dir)
    local.note = "the folder, before publishing it (leaves the receipt the publish finds)"
    stages.append(local)
    floor = next((st for st in stages if st.name == "transfer-floor"), None)
    published = _publish_stages("publish", python, release, repo, work / "hub", env, log_dir,
                                copy, hub_src, verify_tag="verify" not in skip, floor=floor,
                                repeat=3)
    stages += published
    if published[0].ok and "reverify" not in skip:
        stages += _publish_stages("publish-reverify", python, release, repo,
                                  work / "hub-reverify", env, log_dir, copy, hub_src,
                                  verify_tag=False, extra_args=["--reverify"])
    return stages


def transfer_floor(python: str, release: Path, work: Path, env: dict, log_dir: Path,
                   copy: Stage) -> Stage:
    """``bench/transfer_floor.py``: every file hashed, then sent over loopback to a receiver
    that hashes, writes (as the local Hub stores an object) and fsyncs it; no HTTP, no Hub
    server, no client library (the floor of a publish)."""
    import json

    dest = work / "floor-dest"
    shutil.rmtree(dest, ignore_errors=True)
    st = run_stage("transfer-floor", [python, Path(__file__).parent / "transfer_floor.py",
                                      release, dest], env=env, log_dir=log_dir)
    shutil.rmtree(dest, ignore_errors=True)
    if st.ok:
        lines = (log_dir / "transfer-floor.log").read_text(encoding="utf-8").splitlines()
        st.extra = json.loads(lines[-1])
        st.note = (f"hash {st.extra['hash_seconds']:.1f} s, then transfer "
                   f"{st.extra['transfer_seconds']:.1f} s: the least a verifying upload does = "
                   f"{copy.seconds / st.seconds:.2f} x the copy")
    return st


def _publish_stages(name: str, python: str, release: Path, repo: str, hub_root: Path, env: dict,
                    log_dir: Path, copy: Stage, hub_src: Path | None, *, verify_tag: bool,
                    extra_args: Sequence[str] = (), floor: Stage | None = None,
                    repeat: int = 1) -> list[Stage]:
    """Publish ``release`` to a new local Hub at ``hub_root`` (stage ``name``, its ratio to the
    copy), ``repeat`` times, each into a new Hub, and keep the median run (as the copy keeps
    the median of its three); then, with ``verify_tag``, verify the last one by tag into an
    empty cache. The publish stage comes first."""
    n_bytes = tree_bytes(release)[1]
    runs: list[Stage] = []
    stages: list[Stage] = []
    for i in range(repeat):
        shutil.rmtree(hub_root, ignore_errors=True)
        server = Server(python, hub_root, env, log_dir, hub_src)
        try:
            henv = {**env, "HF_ENDPOINT": server.url}
            if server.token:
                henv["HF_TOKEN"] = server.token
            log_name = name if repeat == 1 else f"{name}-{i + 1}"
            pub = run_stage(log_name, [python, "-c", TIMED_CLI, "release", "publish", release,
                                       "--repo", repo, "--create-repo", *extra_args], env=henv,
                            log_dir=log_dir)
            log_text = (log_dir / f"{log_name}.log").read_text(errors="replace")
            pub.name = name
            pub.extra = {"server_peak_rss": server.peak_rss(), "bytes": n_bytes,
                         "copy_seconds": copy.seconds,
                         "upload_seconds": upload_seconds(log_dir / f"{log_name}.log"),
                         "lfs_batch_requests": (log_dir / "hub-server.log").read_text(
                             errors="replace").count("lfs/objects/batch"),
                         # the publisher's line when a receipt of the same bytes stood for
                         # its checks
                         "receipt": "hashed again are the ones that passed" in log_text}
            runs.append(pub)
            if not pub.ok:   # a failed publish is reported as it is, not repeated
                pub.note = f"failed: see {log_name}.log"
                return [pub]
            if i == repeat - 1:
                pub = sorted(runs, key=lambda st: st.seconds)[len(runs) // 2]
                pub.extra["publish_seconds_all"] = [round(st.seconds, 3) for st in runs]
                pub.note = _publish_note(pub, copy, floor, extra_args, runs)
                stages.append(pub)
                if verify_tag:
                    stages.append(_verify_by_tag(python, release, repo, hub_root, henv,
                                                 log_dir))
        finally:
            server.stop()
    return stages


def _verify_by_tag(python: str, release: Path, repo: str, hub_root: Path, henv: dict,
                   log_dir: Path) -> Stage:
    """``rcp-data verify --repo R --revision <the release's tag>`` into an empty cache."""
    import json

    history = json.loads((release / "provenance" / "releases.json").read_text())
    tag = history["releases"][-1]["tag"]
    hf_home = hub_root.parent / "hf_home"   # the bench's own, emptied
    shutil.rmtree(hf_home, ignore_errors=True)
    ver = run_stage("verify", [python, "-m", "rcp_data", "verify", "--repo", repo,
                               "--revision", tag], env={**henv, "HF_HOME": str(hf_home)},
                    log_dir=log_dir)
    ver.note = f"by tag {tag}, into an empty cache"
    return ver


def _publish_note(pub: Stage, copy: Stage, floor: Stage | None, extra_args: Sequence[str],
                  runs: list[Stage]) -> str:
    n_bytes, upload = pub.extra["bytes"], pub.extra["upload_seconds"]
    note = (("every check run again (--reverify); " if extra_args else
             "after verify-local: files hashed, its receipt found; " if pub.extra["receipt"]
             else "")
            + (f"median of {len(runs)} ({', '.join(f'{st.seconds:.1f}' for st in runs)} s), "
               if len(runs) > 1 else "")
            + f"{'LFS' if pub.extra['lfs_batch_requests'] else 'inline'} path: "
            f"{n_bytes / pub.seconds / MIB:,.0f} MiB/s = {copy.seconds / pub.seconds:.2f} x the "
            "copy"
            + (f" (its upload after the checks: {upload:,.1f} s = "
               f"{copy.seconds / upload:.2f} x the copy)" if upload else "")
            + f"; server peak RSS {_fmt_b(pub.extra['server_peak_rss'])}")
    if floor is not None and floor.ok:
        pub.extra["floor_seconds"] = floor.seconds
        note += f"; {pub.seconds / floor.seconds:.2f} x the transfer floor's time"
    return note


# ``rcp-data`` with time-stamped log lines (the CLI keeps a logging setup made before it)
TIMED_CLI = ("import logging, sys; logging.basicConfig(level=logging.INFO, datefmt='%H:%M:%S', "
             "format='%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s'); "
             "from rcp_data.cli import main; sys.exit(main(sys.argv[1:]))")


def upload_seconds(log: Path) -> float | None:
    """Seconds from the publisher's "verified ... before publishing" to "published release"
    in a time-stamped publish log: the commit and the tag, after the checks and hashing."""
    stamps = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        for key, marker in (("checked", "before publishing"), ("done", "published release")):
            if marker in line and line[:2].isdigit():
                h, mi, sec = line.split()[0].split(":")
                stamps.setdefault(key, int(h) * 3600 + int(mi) * 60 + float(sec))
    if len(stamps) < 2:
        return None
    return (stamps["done"] - stamps["checked"]) % 86400


def _fmt_s(s: float) -> str:
    return f"{s:,.1f} s" if s < 120 else f"{s / 60:,.1f} min"


def _fmt_b(b: int) -> str:
    return f"{b / GIB:,.2f} GiB" if b >= GIB else f"{b / MIB:,.0f} MiB"


def extrapolate(value: float, base: float, scale: float) -> float:
    """A corpus-bound measure at scale 1: the part above the fixed ``base`` (interpreter and
    imports) grows linearly with the corpus."""
    return value if scale >= 1 else base + max(value - base, 0.0) / scale


def print_table(stages: list[Stage], *, scale: float, linear: set[str],
                base: Stage | None = None) -> None:
    """The stage table: wall time, CPU time, peak RSS, load; each corpus-bound stage also
    extrapolated to scale 1 from this run alone (CPU time and RSS, see :func:`extrapolate`;
    ``base``: the stage measuring the fixed cost). For RSS that is an upper bound: stages that
    stream hold less than a share of the corpus; :func:`two_point` is the better estimate."""
    print()
    print(f"{'stage':<10} {'wall':>9} {'CPU':>9} {'peak RSS':>10} {'anon':>10} {'load':>5}   "
          f"{'scale 1 (1 run): CPU / RSS':>28}  note")
    b_c, b_r = (base.cpu_seconds, base.peak_rss) if base else (0.0, 0)
    for s in stages:
        if s.name in linear and scale < 1:
            ext = (f"{_fmt_s(extrapolate(s.cpu_seconds, b_c, scale))} / <= "
                   f"{_fmt_b(int(extrapolate(s.peak_rss, b_r, scale)))}")
        else:
            ext = "-"
        print(f"{s.name:<10} {_fmt_s(s.seconds):>9} {_fmt_s(s.cpu_seconds):>9} "
              f"{_fmt_b(s.peak_rss):>10} {_fmt_b(s.peak_anon):>10} {s.load:>5.1f}   {ext:>28}  "
              f"{s.note}{'' if s.ok else f' (exit {s.rc})'}")


def two_point(stages: list[Stage], scale: float, other: Path) -> dict[str, tuple]:
    """Each stage at scale 1 from a line through this run and another run's results
    (``results.json`` of the same benchmark at another scale): ``{name: (cpu, rss, anon)}``.
    Wall time is left out: it follows the machine's load, which differs between runs."""
    import json

    data = json.loads(Path(other).read_text(encoding="utf-8"))
    s0 = float(data["scale"])
    before = {st["name"]: st for st in data["stages"]}
    if abs(scale - s0) < 1e-9:
        raise SystemExit(f"{other} is at the same scale ({s0}); give a run at another scale")
    out = {}
    print(f"\nat scale 1, from a line through scale {s0:.4f} ({other}) and {scale:.4f}:")
    for st in stages:
        o = before.get(st.name)
        if o is None or st.name == "baseline":
            continue

        def at_1(a: float, b: float) -> float:
            return b + (b - a) / (scale - s0) * (1 - scale)

        vals = (at_1(o.get("cpu_seconds", 0), st.cpu_seconds),
                max(at_1(o["peak_rss"], st.peak_rss), st.peak_rss),
                max(at_1(o.get("peak_anon", 0), st.peak_anon), st.peak_anon))
        out[st.name] = vals
        print(f"  {st.name:<10} {_fmt_s(vals[0]):>9} CPU {_fmt_b(int(vals[1])):>10} peak RSS "
              f"{_fmt_b(int(vals[2])):>10} peak anonymous")
    return out


def save(stages: list[Stage], path: Path, **meta) -> None:
    data = {**meta, "stages": [asdict(s) for s in stages]}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"results: {path}")
