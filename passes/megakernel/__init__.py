"""Megakernel fusion: tiles, tasks, event tensors, static and dynamic schedules."""
