"""Scoring: the nDCG engine, replay of provenance runs, table comparison, pair statistics."""
