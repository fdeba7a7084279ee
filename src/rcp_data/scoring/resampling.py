"""The query bootstrap's settings, shared by every paired comparison (``score --against`` and
``score --qrels``): resamples drawn and the generator's seed. A module of its own so that
``score --qrels`` reads them without importing SciPy or pandas."""

RESAMPLES = 2000
SEED = 0

__all__ = ["RESAMPLES", "SEED"]
