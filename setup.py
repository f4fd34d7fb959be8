"""What goes into the wheel (pyproject.toml holds the rest of the metadata): ragkit's packages,
the files it reads from its own package at run time, and the demo data.

The demo data (what ``ragkit serve --demo`` builds its sources from) ships as
``ragkit/demo_data``, mapped from this repository's ``data/``, which the notebooks, docs
and tests read: one copy. ``ragkit.service.demo_data_dir`` finds it either way."""

from setuptools import find_packages, setup

PACKAGE_DATA = {
    "ragkit": ["py.typed"],
    "ragkit.causal": ["schema.json"],
    "ragkit.eval": ["datasets_manifest.json"],
    "ragkit.text.lexicons": ["*.json"],
}
# Folders of data/ (setuptools treats each folder as a package) and the files the demo reads.
DEMO_DATA = {
    "": ["merged_knowledge_graph.json", "nobel_edges.csv"],
    "manuals": ["*.md"],
    "specs": ["*.md"],
    "biomed": ["nodes.csv", "edges.csv"],
}
DEMO = {".".join(filter(None, ("ragkit.demo_data", folder))): files for folder, files in DEMO_DATA.items()}

setup(packages=find_packages(include=["ragkit", "ragkit.*"]) + list(DEMO),
      package_dir={"ragkit.demo_data": "data"},
      package_data=PACKAGE_DATA | DEMO)
