"""Checks of a release: integrity of the tables, publishability, verification of a revision."""
