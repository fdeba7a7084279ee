"""Building a release: the first stage (BM25, dense), pools, the builder inputs and their checks, the judge's tables, the release builder."""
