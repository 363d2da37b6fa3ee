"""A finite background downloader, as abx-plugins' wget: ignores SIGTERM (cleanup lets it finish
within its timeout), says it started on stdout at once, writes its page after ABXFETCH_SECONDS."""
import json
import os
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("download started", flush=True)
time.sleep(float(os.environ["ABXFETCH_SECONDS"]))
with open("page.html", "w") as fh:
    fh.write("<html><body>downloaded</body></html>\n")
with open("end.txt", "w") as fh:
    fh.write(f"{time.time():.6f}\n")
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "page.html"}))
