#!/usr/bin/env python3
# /// script
# requires-python = ">=3.12"
# ///
"""Test hook that needs Python >= 3.12: reports the interpreter it ran under."""

import json
import sys

if sys.version_info < (3, 12):
    print(f"needs Python >= 3.12, got {sys.version.split()[0]}", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": f"python {sys.version.split()[0]} at {sys.executable}"}))
