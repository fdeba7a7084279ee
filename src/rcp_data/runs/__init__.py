"""Every reader of runs and qrels: TREC files (the compiled pass :mod:`._run_scan` and its NumPy
fallback, one dispatch in :mod:`.qrels_runs`), runs given as parquet, frames or mteb predictions
(:mod:`.runs_in`), whether a user's file or a build input."""
