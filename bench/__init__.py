"""tritone's benchmark suite: `python bench/run.py` prints tritone's figures beside
upstream Triton's and torch's from the same run (see bench/README.md)."""
