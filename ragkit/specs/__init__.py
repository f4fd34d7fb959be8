"""3GPP specifications: ingestion, chunking and the term dictionary."""
