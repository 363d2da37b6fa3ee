#!/usr/bin/env -S uv run --script
# /// script
# requires-python = ">=3.12"
# dependencies = []
# ///
"""Test hook run as abx-plugins 1.11's hooks are: by `uv run --script`. Reports its interpreter."""

import json
import sys

print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": f"uv ran python {sys.version.split()[0]}"}))
