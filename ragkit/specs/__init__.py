"""3GPP specifications: ingestion, chunking and the term dictionary (seed 001)."""
