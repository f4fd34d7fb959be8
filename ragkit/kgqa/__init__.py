"""KG question answering (seed 004) over typed graphs in our own stores."""
