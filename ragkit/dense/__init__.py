"""Dense retrieval parts: sentence embeddings and vector stores (Chroma embedded/server)."""
