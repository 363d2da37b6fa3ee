"""Uses the daemons: waits ABXUSE_SECONDS (longer than the daemons' own timeout), then records
whether the crawl's daemon and this snapshot's tab daemon are alive."""
import json
import os
import time


def alive(path):
    try:
        with open(path) as fh:
            os.kill(json.load(fh)["pid"], 0)
        return True
    except (OSError, ValueError, KeyError):
        return False


started = time.time()
time.sleep(float(os.environ["ABXUSE_SECONDS"]))
seen = {"start": started, "end": time.time(),
        "browser": alive(os.path.join(os.environ["CRAWL_DIR"], "abxbg", "launch.json")),
        "tab": alive(os.path.join(os.environ["SNAP_DIR"], "abxbg", "tab.json"))}
with open("capture.json", "w") as fh:
    json.dump(seen, fh)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "captured"}))
