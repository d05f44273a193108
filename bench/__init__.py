"""Benchmarks: each prints its figures as a final JSON line, against a baseline measured in the same run."""
