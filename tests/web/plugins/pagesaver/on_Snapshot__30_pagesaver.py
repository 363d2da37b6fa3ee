"""Test hook: saves a small HTML page whose script probes what a sandboxed page can reach.

The page reports, in its own DOM, whether it could read the admin's cookies and whether a
credentialed request to /admin/ came back logged in. It also prints a long stderr, so
the admin's log tail shows only the end of it.
"""
import json
import struct
import sys
import zlib
from pathlib import Path



def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\xff\x00\x00\xff" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


url = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--url=")), "")
page = """<!doctype html>
<html><head><meta charset="utf-8"><title>Saved page</title></head>
<body>
<h1 id="saved">Saved copy of URL_HERE</h1>
<p id="cookie">cookie: pending</p>
<p id="fetch">fetch: pending</p>
<img id="pic" src="pic.png" alt="a saved image" width="40" height="20">
<script>
try { document.getElementById("cookie").textContent = "cookie: read " + JSON.stringify(document.cookie); }
catch (err) { document.getElementById("cookie").textContent = "cookie: blocked (" + err.name + ")"; }
fetch("/admin/", {credentials: "include", redirect: "manual"})
  .then(r => r.text().then(t => { document.getElementById("fetch").textContent =
      "fetch: status " + r.status + (t.indexOf("Log out") >= 0 ? " logged-in" : " anonymous"); }))
  .catch(err => { document.getElementById("fetch").textContent = "fetch: blocked (" + err.name + ")"; });
</script>
</body></html>
""".replace("URL_HERE", url.replace("<", "&lt;"))
Path("page.html").write_text(page)
Path("notes.txt").write_text("plain text output\n")
# A small red PNG, referenced by the page: it must load inside the sandbox.
Path("pic.png").write_bytes(png(4, 2))
Path("sub").mkdir(exist_ok=True)
Path("sub", "data.json").write_text(json.dumps({"url": url}))
for n in range(400):
    print(f"log line {n:04d} " + "x" * 40, file=sys.stderr)
print("END-OF-STDERR-MARKER", file=sys.stderr)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": "page.html"}))
