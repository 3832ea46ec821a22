"""tirc.backends."""
