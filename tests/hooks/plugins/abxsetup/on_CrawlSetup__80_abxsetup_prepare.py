"""A CrawlSetup hook (abx-plugins 1.13): runs once per crawl, in the crawl's folder, before any snapshot.
Writes what it saw (argv, cwd, env, start and end) to prepare.json."""
import json
import os
import sys
import time

started = time.time()
time.sleep(0.3)
with open("prepare.json", "w") as fh:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ), "start": started, "end": time.time()}, fh)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "prepared"}))
