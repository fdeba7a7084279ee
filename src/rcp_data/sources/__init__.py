"""Upstream readers: each turns a suite's sources into plain tables (:class:`SubsetSource`)."""

from rcp_data.sources.base import CorpusReader, SubsetSource, SuiteSource

__all__ = ["CorpusReader", "SubsetSource", "SuiteSource"]
