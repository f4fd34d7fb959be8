"""3GPP specifications: ingestion, chunking and the term dictionary (3GPP spec design)."""
