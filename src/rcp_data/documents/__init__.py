"""Documents generated from a release: the dataset card, the mteb task file, RELEASES.md."""
