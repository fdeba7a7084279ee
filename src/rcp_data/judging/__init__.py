"""Judging a pool: the Stage A and Stage B schedules asked of an OpenAI-compatible endpoint.

- :mod:`.settings`: presets ``full``, ``reduced``, ``stage-b-only`` (placements per document,
  scaling with the pool) and the exact window counts of a pool (:func:`.settings.plan_query`);
- :mod:`.schedule`: the per-query schedulers (paper App. C.2), :mod:`.estimates` the refits
  they order by; :mod:`.plan`: ``judge plan``;
- :mod:`.prompts` (templates and rubric as package files, with sha256), :mod:`.answers`
  (tolerant parse, validation, categories), :mod:`.budget` (token budgets and cut census);
- :mod:`.client` (aiohttp, replicas, retries), :mod:`.driver` (the run), :mod:`.store`
  (append-only windows, identity, lock), :mod:`.tables` (the builder-input tables);
- :mod:`.pool_input`: a release's queries, texts and pools;
- :mod:`.imported`: a judgement store of the authors' toolkit (``cohere-ai/rcp-ndcg``) read as
  this project's records (``judge import``); what that store does not hold (calls behind a
  record, call times, the cut census, the rubric's text) is listed there.
"""
