"""KG question answering (KG QA design) over typed graphs in our own stores."""
