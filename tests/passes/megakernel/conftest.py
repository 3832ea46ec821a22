"""Makes megakernel_support.py importable from the megakernel tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
