"""Build stages: BM25, pools, the judge's tables, calibration, the release builder."""
