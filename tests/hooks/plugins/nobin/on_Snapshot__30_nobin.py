#!/usr/bin/env -S abxpkg run --script --deps-from=./config.json:required_binaries python3
# /// script
# requires-python = ">=3.12"
# ///
"""Test hook needing a binary no provider has: it must never run (its result fails once, saying why)."""

import pathlib

pathlib.Path("ran.txt").write_text("this hook ran\n")
