"""Compaction quality: what a context compaction's summary keeps of the user's constraints and
decisions (`python -m benchmark.compaction`)."""
