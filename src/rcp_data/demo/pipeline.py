"""The demo job (README's main command): build -> publish -> verify, on SYNTHETIC data.

1. build release 1 of the bundled demo suite, add releases.json, the task file and the card;
2. re-read the judge's Stage A answers that release 1 ships with the stricter ``complete``
   rule, refit Stage A and the 2PL MAP, and build release 2 from it: same data, new gains;
3. start an embedded local Hub, publish release 1 and release 2 as tagged revisions;
4. regenerate the card (a commit that writes in the shas known now; no tag moves);
5. list the releases (Hub refs beside releases.json), verify both releases by tag;
6. stop the Hub.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from rcp_data.core.specs import load_spec

log = logging.getLogger(__name__)

DEMO_REPO = "rcp-data/rcp-ndcg-demo"


def refit(release: Path):
    """Release 2's calibration: release 1's own answers, Stage A re-read with ``complete``."""
    from rcp_data.demo.suite import RELEASE_2_RULE
    from rcp_data.release.recalibrate import refit_from_release

    return refit_from_release(release, load_spec("demo"), stage_a_rule=RELEASE_2_RULE)


def build_demo_releases(out: Path, *, date: str | None = None
                        ) -> tuple[Path, Callable[[str], Path]]:
    """Build release 1 (ready to publish) and return a builder of release 2.

    Release 2 needs release 1's commit sha (its releases.json names it), so it is built by the
    returned function once release 1 is published.
    """
    from rcp_data.core.history import read_history
    from rcp_data.demo.suite import make_demo_release
    from rcp_data.release.prepare import prepare_release, render_release_files
    from rcp_data.release.recalibrate import diff_releases, recalibrate_release

    spec = load_spec("demo")
    date = date or _dt.date.today().isoformat()
    v1, v2 = out / "release-v1", out / "release-v2"
    inputs = out / "inputs"
    make_demo_release(v1, work=inputs)
    prepare_release(v1, spec, DEMO_REPO, date=date)
    print(f"built SYNTHETIC demo release 1 into {v1}")

    def build_v2(previous_sha: str) -> Path:
        from rcp_data.stages.calibration.pipeline import fitted_item_params

        cal = refit(v1)
        rules = cal.reading_rules
        print(f"re-read the demo judge's answers ({rules}) and refitted: gamma="
              f"{[round(g, 3) for g in cal.params.gamma]} beta="
              f"{[round(b, 3) for b in cal.params.beta]}")
        recalibrate_release(v1, v2, spec, fitted_item_params(cal), thetas=cal.thetas, date=date,
                            previous_revision=previous_sha, reading_rules=rules,
                            summary="SYNTHETIC demo data. Recalibration: the same answers "
                            f"re-read (Stage A rule {rules.get('stage_a')}) and refitted "
                            "(Bradley-Terry, then 2PL MAP); new theta_bt, thetas and gains.")
        render_release_files(v2, spec, read_history(v2 / "provenance/releases.json"))
        diff = diff_releases(v1, v2, spec)
        print(f"built SYNTHETIC demo release 2 into {v2}: {diff.text()}")
        return v2

    return v1, build_v2


def run_demo(out: Path) -> int:
    """The README's main command. Returns the exit code (0: everything verified)."""
    from rcp_data.hub.server import LocalHub

    out = Path(out).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    hub = LocalHub(out / "hub")
    url = hub.start()
    previous_endpoint = os.environ.get("HF_ENDPOINT")
    os.environ["HF_ENDPOINT"] = url
    print(f"started the local Hub at {url} (data in {out / 'hub'})")
    try:
        from rcp_data.release.publish import hub_api, publish
        from rcp_data.release.refs import list_releases, render_listing

        api = hub_api(url)
        v1, build_v2 = build_demo_releases(out)
        r1 = publish(v1, DEMO_REPO, api=api, create_repo=True)
        print(f"published release 1 as {r1.tag} at {r1.commit}")
        v2 = build_v2(r1.commit)
        r2 = publish(v2, DEMO_REPO, api=api)
        print(f"published release 2 as {r2.tag} at {r2.commit}")
        from rcp_data.release.regenerate import regenerate

        regen = regenerate(DEMO_REPO, "main", workdir=out)
        print(f"regenerated the card with the shas known now: commit {regen.commit} changes "
              f"{', '.join(regen.changed) or 'nothing'} (no tag moves)")
        print(render_listing(list_releases(DEMO_REPO, api=api)))
        code = 0
        from rcp_data.checks.verify import verify

        for tag in (r1.tag, r2.tag):
            report = verify(repo=DEMO_REPO, revision=tag, cache_dir=out / "verify-cache")
            print(report.text())
            code = max(code, report.exit_code)
        print("demo finished: " + ("both releases verified" if code == 0 else
                                   "VERIFICATION FAILED"))
        return code
    finally:
        hub.stop()
        if previous_endpoint is None:
            os.environ.pop("HF_ENDPOINT", None)
        else:
            os.environ["HF_ENDPOINT"] = previous_endpoint
        print("stopped the local Hub")
