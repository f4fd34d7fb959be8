"""KG question answering over typed graphs in our own stores."""
