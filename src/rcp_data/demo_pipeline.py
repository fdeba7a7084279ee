"""The demo job: build -> publish -> verify on the bundled SYNTHETIC suite (README's command)."""

from __future__ import annotations

import logging
from pathlib import Path

from rcp_data.demo import make_demo_release

log = logging.getLogger(__name__)


def run_demo(out: Path) -> int:
    out = Path(out)
    release1 = out / "release-v1"
    make_demo_release(release1, work=out / "inputs-v1")
    print(f"built SYNTHETIC demo release 1 into {release1}")
    from rcp_data.replay import render_markdown_tables, replay_release

    result = replay_release(release1)
    print(render_markdown_tables(result))
    return 0
