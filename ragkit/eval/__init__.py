"""Evaluation: retrieval metrics and the dataset converters benchmarks use."""
