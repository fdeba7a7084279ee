"""Judging a pool: the Stage A and Stage B schedules asked of an OpenAI-compatible endpoint.

- :mod:`.settings`: presets ``full``, ``reduced``, ``stage-b-only`` (placements per document,
  scaling with the pool) and the exact window counts of a pool (:func:`.settings.plan_query`);
- :mod:`.schedule`: the per-query schedulers (paper App. C.2), :mod:`.estimates` the refits
  they order by; :mod:`.plan`: ``judge plan``;
- :mod:`.prompts` (templates and rubric as package files, with sha256), :mod:`.answers`
  (tolerant parse, validation, categories), :mod:`.budget` (token budgets and cut census);
- :mod:`.client` (aiohttp, replicas, retries), :mod:`.driver` (the run), :mod:`.store`
  (append-only windows, identity, lock), :mod:`.tables` (the builder-input tables);
- :mod:`.pool_input`: a release's queries, texts and pools.

Importing a store of the authors' toolkit (``cohere-ai/rcp-ndcg``) is not implemented: its
documentation names the store's files (``tournament.jsonl``, ``rubric.jsonl``, ``identity.json``,
``preprocessing.jsonl``, ``prompts/<sha256>.txt``) and says that a ``Judgement`` record holds
each placement with the judge's score, the judge's ranking and the raw answer, but it does not
give the record's field names or types, how a record names its schedule phase and place in the
sequence, or how a rubric record lays out its criteria; reading the package's code for them is
off limits to this project.
"""
