"""A small site that exercises the web archive, written into a folder served by localsite.

- ``/fetch.html``: a stylesheet (``style.css``: colours the test reads back), the shared
  image ``shared.png`` (about 196 KB of noise: no compression shrinks it), a script
  (``app.js``) that fetches ``data.json`` and writes its text into ``#out``, makes an image
  from the URL it names (``made.png``), fetches ``big.bin`` (10 MB) and writes its length
  into ``#big``; an image that does not exist (``missing.png``: a 404).
- ``/page-1.html`` .. ``/page-N.html``: text, the stylesheet and the shared image.
- redirects: ``/redirect?to=/redirect%3Fto%3D/page-1.html`` is a chain of two 302s.
- ``/lazy.html``: a tall page whose image (``lazy.png``, ``loading=lazy``) loads only once scrolled to.
"""

from __future__ import annotations

import hashlib
import random
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

SCRIPT_TEXT = "scriptword arrived from data.json"
H1_COLOR = "rgb(10, 120, 30)"
BIG_BYTES = 10 * 1024 * 1024


def noise_png(width: int, height: int, seed: int) -> bytes:
    """A PNG of random pixels (it does not compress): width * height * 3 bytes and a little more."""
    rng = random.Random(seed)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))


def sha1_b32(data: bytes) -> str:
    import base64
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


@dataclass
class ArchiveSite:
    root: Path
    pages: list[str]  # paths of the plain pages
    shared_png: bytes
    made_png: bytes
    big: bytes

    @property
    def shared_digest(self) -> str:
        return sha1_b32(self.shared_png)

    @property
    def big_digest(self) -> str:
        return sha1_b32(self.big)


def write_site(root: Path, pages: int = 3) -> ArchiveSite:
    root.mkdir(parents=True, exist_ok=True)
    shared = noise_png(256, 255, 1)  # ~196 KB
    made = noise_png(20, 10, 2)
    big = random.Random(3).randbytes(BIG_BYTES)
    (root / "shared.png").write_bytes(shared)
    (root / "made.png").write_bytes(made)
    (root / "big.bin").write_bytes(big)
    (root / "style.css").write_text(f"h1 {{ color: {H1_COLOR}; }} body {{ background: rgb(250, 250, 240); }}\n")
    (root / "data.json").write_text('{"text": "%s", "image": "made.png"}\n' % SCRIPT_TEXT)
    (root / "app.js").write_text(
        "fetch('data.json').then(r => r.json()).then(d => {\n"
        "  document.getElementById('out').textContent = d.text;\n"
        "  const img = document.createElement('img'); img.id = 'made'; img.src = d.image;\n"
        "  document.body.appendChild(img);\n"
        "});\n"
        "fetch('big.bin').then(r => r.arrayBuffer()).then(b => { document.getElementById('big').textContent = String(b.byteLength); });\n")
    (root / "fetch.html").write_text(
        "<!doctype html><html><head><title>Fetch page</title><link rel=stylesheet href=style.css></head><body>"
        "<h1>Fetched</h1><div id=out>waiting</div><div id=big>no bytes yet</div>"
        "<img id=shared src=shared.png><img id=broken src=missing.png>"
        "<script src=app.js></script></body></html>")
    (root / "lazy.png").write_bytes(noise_png(30, 30, 4))
    (root / "lazy.html").write_text(
        "<!doctype html><html><head><title>Lazy page</title></head><body><h1>Lazy page</h1>"
        "<div style='height: 9000px'>a tall page</div><img id=lazy loading=lazy src=lazy.png></body></html>")
    paths = []
    for n in range(1, pages + 1):
        (root / f"page-{n}.html").write_text(
            f"<!doctype html><html><head><title>Plain page {n}</title><link rel=stylesheet href=style.css></head>"
            f"<body><h1>Plain page {n}</h1><p>plainword{n} with the shared image:</p><img src=shared.png></body></html>")
        paths.append(f"/page-{n}.html")
    return ArchiveSite(root, paths, shared, made, big)
