"""tirc.passes."""
