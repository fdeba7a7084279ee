"""``rcp-data hub serve``: run the local, git-backed Hub until Ctrl-C (exit 130) or SIGTERM
(exit 0: asked to stop)."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from rcp_data.core.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "hub",
        help="run a local Hub-compatible server",
        description="A local server speaking the Hugging Face Hub API subset the clients use.",
    )
    actions = parser.add_subparsers(dest="hub_command", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve the repositories under --root",
        description=(
            "Serve every repository under ROOT (one bare git repository each) until Ctrl-C or "
            "SIGTERM. Point clients at it with HF_ENDPOINT=<printed URL> and HF_HUB_DISABLE_XET=1."
        ),
    )
    serve.add_argument("--root", type=Path, required=True, help="folder holding the repositories")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    serve.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=None,
        metavar="N",
        help="largest request body accepted, in bytes (default 1 GiB; larger: HTTP 413). "
        "LFS uploads above it arrive in parts of at most N bytes",
    )
    serve.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="F",
        help="file whose first line is the token writes need (Authorization: Bearer). Default: "
        "a new token is generated into ROOT/.hub-token (mode 0600) and its path printed",
    )
    serve.add_argument("--read-only", action="store_true",
                       help="refuse every write (HTTP 403); reads stay open")
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from rcp_data.hub.auth import read_token_file
    from rcp_data.hub.limits import DEFAULT_MAX_BODY_BYTES
    from rcp_data.hub.server import serve_forever

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    max_body = DEFAULT_MAX_BODY_BYTES if args.max_body_bytes is None else args.max_body_bytes
    if max_body < 1024:
        raise UsageError(f"--max-body-bytes must be at least 1024, got {max_body}")
    if args.root.exists() and not args.root.is_dir():
        raise UsageError(f"--root {args.root} is not a folder")
    if args.token_file is not None:
        try:
            read_token_file(args.token_file)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise UsageError(f"--token-file {args.token_file}: cannot read a token: {why}") from exc

    def ready(hub) -> None:
        print(f"local Hub serving {args.root} at {hub.url}", flush=True)
        print(f"  export HF_ENDPOINT={hub.url} HF_HUB_DISABLE_XET=1", flush=True)
        if args.quiet:      # -q: the URL (a result) only
            return
        if args.read_only:
            print("  read-only: every write is refused (403)", file=sys.stderr, flush=True)
        elif args.token_file is None:
            print(f"  writes need the token generated into {hub.token_file} "
                  f"(export HF_TOKEN=$(cat {hub.token_file}))", file=sys.stderr, flush=True)
        else:
            print(f"  writes need the token in {args.token_file}", file=sys.stderr, flush=True)

    try:
        stopped_by = serve_forever(args.root, args.host, args.port, on_ready=ready,
                                   max_body_bytes=max_body, token_file=args.token_file,
                                   read_only=args.read_only)
    except OSError as exc:
        raise UsageError(f"cannot serve on {args.host}:{args.port}: {exc.strerror}") from exc
    except RuntimeError as exc:  # another server holds the root
        raise UsageError(str(exc)) from exc
    if stopped_by == signal.SIGINT:    # Ctrl-C: interrupted, as every command
        print("rcp-data hub: interrupted; local Hub stopped", file=sys.stderr)
        return 130
    if not args.quiet:
        print("local Hub stopped", file=sys.stderr)
    return 0
