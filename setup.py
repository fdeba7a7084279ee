"""The one thing pyproject.toml cannot say without an experimental table: the compiled passes of
``score --qrels``'s run reader (C, no dependency). ``optional``: where no C compiler is there
the install goes on without them, and the reader does the same work with NumPy (same results)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("rcp_data.runs._run_scan",
                             sources=["src/rcp_data/runs/_run_scan.c"],
                             optional=True)])
