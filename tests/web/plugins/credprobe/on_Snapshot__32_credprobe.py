"""Test hook: shows what a hook does with a URL that carries a password.

It writes the URL it was given to ``seen_url.txt`` (so a test can tell the hook got the
real one), prints it on stderr and on stdout (as a hook's log would), and reports it in its
result's ``output_str`` and ``output_json``.
"""
import json
import sys
from pathlib import Path

url = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--url=")), "")
Path("seen_url.txt").write_text(url)
print(f"fetching {url}", file=sys.stderr)
print(f"plain log line about {url}")
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": f"fetched {url}", "output_json": {"url": url}}))
