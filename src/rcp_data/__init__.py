"""rcp-data: build, release and verify RCP-nDCG datasets."""
__version__ = "0.1.0"
