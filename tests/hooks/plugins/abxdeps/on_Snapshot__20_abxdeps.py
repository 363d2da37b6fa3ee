#!/usr/bin/env -S abxpkg run --script --deps-from=./config.json:required_binaries python3
# /// script
# requires-python = ">=3.12"
# ///
"""Test hook run as abx-plugins hooks are: through abxpkg's shebang, with a pip and an npm binary
and a Debian one (env, else apt) declared in its config.json. Reports the interpreter, the binaries it was given and their output."""

import json
import os
import shutil
import subprocess
import sys

cowsay = os.environ["ABXDEPS_COWSAY_BINARY"]
said = subprocess.run([cowsay, "-t", "moo"], capture_output=True, text=True, check=True).stdout
semver = shutil.which("semver")
valid = subprocess.run([semver, "1.2.3"], capture_output=True, text=True, check=True).stdout.strip()
wget = os.environ["ABXDEPS_WGET_BINARY"]
import abxpkg  # noqa: E402,F401 - the hooks' runtime has abxpkg, as abx-plugins hooks expect

report = {"python": list(sys.version_info[:2]), "cowsay": cowsay, "said_moo": "moo" in said, "semver": semver, "valid": valid, "wget": wget}
with open("deps.json", "w") as out:
    json.dump(report, out)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": f"cowsay at {cowsay}, semver {valid}",
                  "output_json": report}))
