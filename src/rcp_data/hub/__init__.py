"""The local, git-backed Hub (``server``, ``gitstore``) and the release publisher.

``rcp_data.hub.server.LocalHub`` / ``embedded_hub`` run a server that unmodified
``huggingface_hub`` and ``datasets`` clients talk to; see ``shared/design/hub-api.md``.
"""
