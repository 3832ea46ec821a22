"""tirc.frontend."""
