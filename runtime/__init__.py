"""tirc.runtime."""
