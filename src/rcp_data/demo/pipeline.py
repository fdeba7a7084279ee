"""The demo job (README's main command): build -> publish -> verify, on SYNTHETIC data.

1. build release 1 of the bundled demo suite with releases.json, the task file and the card
   (:func:`rcp_data.release.cut.build_release_dir`, as ``rcp-data build`` does);
2. re-read the judge's Stage A answers that release 1 ships with the stricter ``complete``
   rule, refit Stage A and the 2PL MAP, and build release 2 from it: same data, new gains;
3. start an embedded local Hub, publish release 1 and release 2 as tagged revisions, recording
   each (commit sha and content digest) in the demo's own record folder (``records/``, as
   ``release publish --record-to`` does);
4. regenerate the card (a commit that writes in the shas known now; no tag moves), and write
   those files back into ``release-v2``, so its history names both commits (``rcp-data
   recalibrate demo-out/release-v2 ...`` needs no ``--previous-revision``);
5. list the releases (Hub refs beside releases.json), verify both releases by tag against that
   record (``--histories``: the anchor outside the repository);
6. stop the Hub.

Everything is written to a temporary folder beside ``out`` and moved into place at the end
(:func:`rcp_data.core.outputs.output_dir`): ``out`` must be new or empty, or a demo folder
written earlier (its ``demo.json``) and ``force`` given. A demo folder whose Hub a server is
serving now (``rcp-data hub serve --root OUT/hub``), or whose Hub holds refs the demo did not
make (``demo.json`` records every ref it left), is never replaced.

Every step reaches the embedded Hub through one :class:`HubClient` carrying the token the Hub
generated into its root (as ``huggingface_hub`` passes any token; downloads go under the output
folder); the environment is left as it is.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
from collections.abc import Callable
from pathlib import Path

from rcp_data.core.errors import UsageError
from rcp_data.core.hub_client import HubClient
from rcp_data.core.specs import load_spec

log = logging.getLogger(__name__)

DEMO_REPO = "rcp-data/rcp-ndcg-demo"


def build_demo_releases(out: Path, *, date: str | None = None,
                        say: Callable[[str], None] = print
                        ) -> tuple[Path, Callable[[str], Path]]:
    """Build release 1 (ready to publish) and return a builder of release 2.

    Release 2 needs release 1's commit sha (its releases.json names it), so it is built by the
    returned function once release 1 is published.
    """
    from rcp_data.demo.suite import RELEASE_2_RULE, make_demo_release
    from rcp_data.release.recalibrate import recalibrate

    spec = load_spec("demo")
    date = date or _dt.date.today().isoformat()
    v1, v2 = out / "release-v1", out / "release-v2"
    make_demo_release(v1, work=out / "inputs", prepare=True, repo=DEMO_REPO, date=date)
    say(f"built SYNTHETIC demo release 1 ({v1.name})")

    def build_v2(previous_sha: str) -> Path:
        # release 1's own answers, Stage A re-read with the stricter rule, refitted
        result = recalibrate(v1, v2, spec=spec, rule=RELEASE_2_RULE, date=date,
                             previous_revision=previous_sha,
                             summary="SYNTHETIC demo data. Recalibration: the same answers "
                             f"re-read (Stage A rule {RELEASE_2_RULE}) and refitted "
                             "(Bradley-Terry, then 2PL MAP); new theta_bt, thetas and gains.")
        params = result.params
        say(f"re-read the demo judge's answers ({params.extra.get('reading_rules')}) and "
            f"refitted: gamma={[round(g, 3) for g in params.gamma]} beta="
            f"{[round(b, 3) for b in params.beta]}")
        say(f"built SYNTHETIC demo release 2 ({v2.name}): {result.diff.text()}")
        return v2

    return v1, build_v2


def run_demo(out: Path, *, force: bool = False, say: Callable[[str], None] = print,
             show: Callable[[str], None] = print) -> int:
    """The README's main command. Returns the exit code (0: everything verified); ``say``
    prints each status line (the CLI's: on a terminal only, never with ``-q``), ``show`` each
    result (the release listing, each verification in brief; the full reports are written to
    ``out/verify-<tag>.txt``)."""
    from rcp_data.core.io import write_json
    from rcp_data.core.outputs import DEMO, output_dir
    from rcp_data.hub.gitstore import root_refs

    out = Path(out)
    out = Path(os.path.realpath(out.parent)) / out.name   # a link there is replaced
    check_hub_replaceable(out)
    with output_dir(out, DEMO, force=force) as work:
        manifest = {"schema": DEMO.schema, "synthetic": True,
                    "what": "rcp-data demo: SYNTHETIC releases, builder inputs, local Hub"}
        write_json(manifest, work / DEMO.manifest)
        code = _run_demo(work, say, show)
        # what the demo made: every ref it left on its Hub (a later --force checks them)
        write_json({**manifest, HUB_REFS: root_refs(work / "hub")}, work / DEMO.manifest)
    say(f"wrote {out} (releases, builder inputs, the local Hub's repositories)")
    return code


HUB_REFS = "hub_refs"


def check_hub_replaceable(out: Path) -> None:
    """Raise :class:`UsageError` when ``out/hub`` is served now, or holds refs that the demo
    which wrote ``out`` did not leave there (its ``demo.json``)."""
    from rcp_data.core.io import read_json
    from rcp_data.core.outputs import DEMO
    from rcp_data.hub.gitstore import root_refs, root_served

    hub = out / "hub"
    if not hub.is_dir():
        return
    if root_served(hub):
        raise UsageError(f"--out {out}: a local Hub is serving {hub} now (rcp-data hub serve); "
                         "stop it or choose another --out (nothing was written)")
    if not DEMO.written_here(out):
        return                        # not a demo folder: output_dir refuses it
    made = read_json(out / DEMO.manifest).get(HUB_REFS)
    now = root_refs(hub)
    if made == now:
        return
    made = made if isinstance(made, dict) else {}
    foreign = sorted(f"{repo} {ref}" for repo, refs in now.items() for ref, sha in refs.items()
                     if (made.get(repo) or {}).get(ref) != sha)
    what = (", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                      else "")) if foreign else "refs the demo left are gone"
    raise UsageError(f"--out {out}: its Hub holds commits the demo did not make ({what}); "
                     f"--force replaces only what the demo made: move {hub} out or choose "
                     "another --out (nothing was written)")


def _run_demo(out: Path, say: Callable[[str], None], show: Callable[[str], None]) -> int:
    from rcp_data.hub.server import LocalHub

    hub = LocalHub(out / "hub")
    url = hub.start()
    client = HubClient(endpoint=url, token=hub.token, cache_dir=out / "verify-cache")
    say(f"started a local Hub at {url}")
    try:
        from rcp_data.release.publish import publish
        from rcp_data.release.refs import list_releases, render_listing

        records = out / "records"
        v1, build_v2 = build_demo_releases(out, say=say)
        r1 = publish(v1, DEMO_REPO, client=client, create_repo=True, record_to=records)
        say(f"published release 1 as {r1.tag} at {r1.commit} (digest {r1.digest})")
        v2 = build_v2(r1.commit)
        r2 = publish(v2, DEMO_REPO, client=client, record_to=records)
        say(f"published release 2 as {r2.tag} at {r2.commit} (digest {r2.digest}); both "
            f"recorded in {records}")
        from rcp_data.release.regenerate import regenerate

        regen = regenerate(DEMO_REPO, "main", client=client)
        say(f"regenerated the card with the shas known now: commit {regen.commit} changes "
              f"{', '.join(regen.changed) or 'nothing'} (no tag moves)")
        _write_back(client, regen.commit, regen.changed, v2)
        show(render_listing(list_releases(DEMO_REPO, client=client)).rstrip("\n"))
        code = 0
        from rcp_data.checks.verify import verify
        from rcp_data.core.io import as_user_sees, atomic_write_text

        for tag in (r1.tag, r2.tag):
            report = verify(repo=DEMO_REPO, revision=tag, client=client, histories=records)
            atomic_write_text(out / f"verify-{tag}.txt", report.text() + "\n")
            show(report.brief())
            code = max(code, report.exit_code)
        shown = as_user_sees(str(out))
        show("demo finished: " + ("both releases verified" if code == 0 else
                                  "VERIFICATION FAILED") + f" (full reports: {shown}/verify-*.txt)")
        return code
    finally:
        hub.stop()
        say("stopped the local Hub")


def _write_back(client: HubClient, commit: str | None, changed: list[str], release: Path
                ) -> None:
    """The regenerated files (history with both shas, card, task file) into ``release``."""
    import shutil

    if commit is None:
        return
    for rel in changed:
        (release / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(client.download_file(DEMO_REPO, rel, commit), release / rel)
