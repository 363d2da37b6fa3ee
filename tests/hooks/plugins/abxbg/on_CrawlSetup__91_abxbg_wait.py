"""A crawl-level foreground hook after the daemon (as chrome_wait): records when it started and
whether the daemon had said it was ready by then."""
import json
import os
import time

started = time.time()
with open("wait.json", "w") as fh:
    json.dump({"start": started, "launched": os.path.exists("launch.json")}, fh)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "browser is up"}))
