"""A snapshot-level daemon (as chrome_tab): ready after a moment, then runs until SIGTERM,
which kills it (no handler, no record)."""
import json
import os
import time

time.sleep(float(os.environ["ABXBG_READY_DELAY"]))
with open("tab.json", "w") as fh:
    json.dump({"pid": os.getpid(), "ready": time.time()}, fh)
print("tab open", flush=True)
while True:
    time.sleep(0.05)
