"""Same step as abxslow, but its plugin waits for abxslow's results: records when it started."""
import json
import time

with open("after.json", "w") as fh:
    json.dump({"start": time.time()}, fh)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "after"}))
