"""A snapshot hook of the same plugin: writes what it saw to snap.json, to compare with the crawl's hooks."""
import json
import os
import sys
import time

with open("snap.json", "w") as fh:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ), "start": time.time()}, fh)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "snap"}))
