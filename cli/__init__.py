"""tirc.cli."""
