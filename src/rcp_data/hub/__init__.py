"""The local, git-backed Hub: a server that unmodified ``huggingface_hub`` and ``datasets``
clients talk to (see ``docs/concepts/local-hub.md``).

``server`` (routes, ``LocalHub``, ``embedded_hub``, ``serve_forever``) on ``transport`` (HTTP
plumbing, the error boundary) and ``limits`` (bounded, streamed request bodies); ``gitstore``
(bare git repositories) with ``lfs`` (the LFS rule, pointers, the object store) and ``lfs_api``
(the git-LFS batch API); ``payload`` (commit bodies read from disk); ``cards`` (README metadata,
safely); ``names`` (paths and ref names); ``auth`` (the bearer token writes need, read-only,
signed LFS upload URLs); ``errors``.
"""
