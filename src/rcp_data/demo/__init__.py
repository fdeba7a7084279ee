"""The SYNTHETIC demo suite, its generated corpus and judge, and the end-to-end demo pipeline."""
