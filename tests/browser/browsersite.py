"""Pages that exercise a browser, written into a test site's folder (served by localsite).

Each page kind is a function of its number, so tests and the benchmark know what to
expect: the title a reader sees and a word only its final text contains.
"""

from __future__ import annotations

import email
import email.policy
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from pypdf import PdfReader

CHROME = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
BROWSER_PLUGINS = "chrome,screenshot,pdf,dom,title,mhtml,htmltotext,search"


@dataclass
class BrowserPage:
    path: str
    title: str  # the title after scripts
    word: str  # a word of its final text
    scripted: bool


def static_page(root: Path, n: int) -> BrowserPage:
    word = f"staticword{n:03d}"
    _write(root, f"static-{n:03d}.html", f"<!doctype html><html><head><title>Static page {n}</title></head>"
           f"<body><h1>Static page {n}</h1><p>{word} is written in the HTML.</p>" + "<p>filler text</p>" * 20
           + "</body></html>")
    return BrowserPage(f"/static-{n:03d}.html", f"Static page {n}", word, False)


def scripted_page(root: Path, n: int) -> BrowserPage:
    """Title and body written by a script after load: the HTML alone says "Loading…"."""
    word = f"scriptword{n:03d}"
    _write(root, f"scripted-{n:03d}.html",
           "<!doctype html><html><head><title>Loading\u2026</title></head><body><div id=app>Loading\u2026</div>"
           "<script>window.addEventListener('load', () => setTimeout(() => {"
           f" document.title = 'Rendered page {n}';"
           f" document.getElementById('app').innerHTML = '<h1>Rendered page {n}</h1><p>' + 'script' + 'word{n:03d} arrived.</p>'"
           "   + '<p>more rendered text</p>'.repeat(20);"
           "}, 50));</script></body></html>")
    return BrowserPage(f"/scripted-{n:03d}.html", f"Rendered page {n}", word, True)


def special_pages(root: Path) -> dict[str, BrowserPage]:
    """The hard cases: a never-finishing load, a script that loops forever, popups and
    alerts, a slow image, a tall page with lazy content."""
    _write(root, "forever.html", "<!doctype html><html><head><title>Forever page</title></head><body>"
           "<p>foreverword is here, but an image never arrives.</p><img src='/slow?delay=600'></body></html>")
    _write(root, "loop.html", "<!doctype html><html><head><title>Loop page</title></head><body>"
           "<p>loopword before the loop.</p><script>document.title = 'Loop started'; while (true) {}</script>"
           "</body></html>")
    _write(root, "popups.html", "<!doctype html><html><head><title>Popup page</title></head><body>"
           "<p>popupword</p><script>alert('an alert'); confirm('a confirm'); window.open('/static-001.html');"
           " document.title = 'Popups done';</script></body></html>")
    _write(root, "slowimage.html", "<!doctype html><html><head><title>Slow image</title></head><body>"
           "<p>slowimageword</p><img id=img src='/slowimg?delay=1.5'></body></html>")
    _write(root, "lazy.html", "<!doctype html><html><head><title>Lazy page</title></head><body>"
           "<div style='height:5000px'>tall</div><div id=end></div><script>"
           "new IntersectionObserver((entries) => { if (entries[0].isIntersecting) {"
           " document.getElementById('end').textContent = 'lazyword appeared'; } })"
           ".observe(document.getElementById('end'));</script></body></html>")
    return {
        "forever": BrowserPage("/forever.html", "Forever page", "foreverword", False),
        "loop": BrowserPage("/loop.html", "Loop started", "loopword", True),
        "popups": BrowserPage("/popups.html", "Popups done", "popupword", True),
        "slowimage": BrowserPage("/slowimage.html", "Slow image", "slowimageword", False),
        "lazy": BrowserPage("/lazy.html", "Lazy page", "lazyword", True),
    }


def mixed_pages(root: Path, count: int) -> list[BrowserPage]:
    """``count`` pages, every other one script-rendered."""
    root.mkdir(parents=True, exist_ok=True)
    return [scripted_page(root, n) if n % 2 else static_page(root, n) for n in range(1, count + 1)]


def _write(root: Path, name: str, html: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(html, encoding="utf-8")


def chromium_processes(profiles: list[str] | None = None) -> list[psutil.Process]:
    """Live Chromium processes; with ``profiles``, only those started with one of them."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmdline = proc.info.get("cmdline") or []
            if proc.info.get("status") == psutil.STATUS_ZOMBIE or not cmdline or "chrom" not in cmdline[0]:
                continue
        except psutil.Error:
            continue
        if profiles is None or any(profile in part for part in cmdline for profile in profiles):
            found.append(proc)
    return found


def browser_profiles(collection) -> list[str]:
    return [row["pwd"] for row in collection.query("SELECT pwd FROM core_process WHERE kind='browser'")]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head.startswith(b"\x89PNG\r\n\x1a\n"), path
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def wait_gone(procs: list[psutil.Process], timeout: float = 15) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    alive = procs
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.05)
    return alive


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def mhtml_html(path: Path) -> str:
    """The HTML document inside an MHTML file (a MIME multipart, parsed by the email package)."""
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    part = next(p for p in message.walk() if p.get_content_type() == "text/html")
    return part.get_content()


def pdf_pages(path: Path) -> int:
    """Pages of a PDF, read with a real parser (raises if the file does not parse)."""
    reader = PdfReader(str(path), strict=True)
    return len(reader.pages)
