"""Where knowledge is kept, apart from what it is: atomic files and folders
(``files``), a networkx graph in one gzip'd JSON file (``files.read_graph`` /
``files.write_graph``), and a Neo4j connection over Bolt with parameterized, batched
queries (``neo4j.Neo4jConnection``; ``neo4j_launcher`` starts a local one).

The spec term graph (``ragkit.specs``) and the typed KG (``ragkit.kgqa``) each build their
store on these; neither reaches into the other.
"""
