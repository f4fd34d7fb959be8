"""Multi-hop questions over a graph of named nodes built from an edge list: a networkx graph
with node-name vectors in Chroma, answered from anchors, reranked neighbours and paths
(``graph.GraphRAG``). The GraphRAG-style concept graph built from text, with its
communities, is ``ragkit.concepts``."""
