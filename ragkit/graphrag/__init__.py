"""Graph RAG multi-hop: an edge list as a networkx graph with node-name vectors in Chroma;
questions answered from anchors, reranked neighbours and paths (``multihop.GraphRAG``)."""
