"""Fixtures and helpers the tests share (imported as ``support.<module>``)."""
