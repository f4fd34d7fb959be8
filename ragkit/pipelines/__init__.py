"""One module per seed capability, each composing ragkit's parts into question → answer."""
