"""A slow foreground hook: writes slow.json with its start and end, a second apart."""
import json
import time

started = time.time()
time.sleep(1.0)
with open("slow.json", "w") as fh:
    json.dump({"start": started, "end": time.time()}, fh)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "slow"}))
