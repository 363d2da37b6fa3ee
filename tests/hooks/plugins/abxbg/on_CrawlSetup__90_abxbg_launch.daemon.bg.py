"""A crawl-level daemon, as abx-plugins' chrome launch: diagnostics on stderr while it starts,
one stdout line once it is ready (launch.json written first), then runs until SIGTERM, when it
records the time, reports success and exits 0."""
import json
import os
import signal
import sys
import time


def on_term(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open("term.txt", "w") as fh:
        fh.write(f"{time.time():.6f}\n")
    print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "browser closed"}), flush=True)
    os._exit(0)


signal.signal(signal.SIGTERM, on_term)
print("launching...", file=sys.stderr, flush=True)
time.sleep(float(os.environ["ABXBG_READY_DELAY"]))
with open("launch.json.tmp", "w") as fh:
    json.dump({"pid": os.getpid(), "ready": time.time()}, fh)
os.rename("launch.json.tmp", "launch.json")
print("browser ready", flush=True)
while True:
    time.sleep(0.05)
