#!/usr/bin/env python3
# /// script
# requires-python = ">=3.12"
# ///
"""Test hook that needs Python >= 3.12: reports what its interpreter gave it (its parent,
its sys.path, its signal dispositions, which modules it found imported) and how it was run."""

import json
import os
import signal
import sys

print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "probed", "output_json": {
    "ppid": os.getppid(), "pid": os.getpid(), "executable": sys.executable, "path0": sys.path[0],
    "version": list(sys.version_info[:2]), "pydantic_imported": "pydantic" in sys.modules,
    "sigint_raises": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
    "sigpipe_ignored": signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN,
}}))
