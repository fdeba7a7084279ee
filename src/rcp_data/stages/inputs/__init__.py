"""The builder inputs: their contract (:mod:`.contract`), run files (:mod:`.run_files`) and
their checks (:mod:`.checks`)."""
