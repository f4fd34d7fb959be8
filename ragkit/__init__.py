"""ragkit: an offline research workbench for retrieval-augmented and knowledge-graph QA."""

__version__ = "0.1.0"
