"""Chunking, tokenising and embedding sources, and writing and reading the three index formats."""
