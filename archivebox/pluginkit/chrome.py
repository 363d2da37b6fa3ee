"""The browser captures, as the capture plugins (screenshot, pdf, dom, mhtml) see them.

The ``chrome`` plugin loads each page once, in a tab of the worker's shared Chromium, and
writes every enabled plugin's capture in ``<SNAP_DIR>/chrome/`` with a record of the visit
(``navigation.json``). Each capture plugin then files its own capture as its own result
(:func:`file_capture`): checked, hard-linked into its folder, reported. This module also
finds the Chromium binary for the ``chrome`` hook when it has to launch one itself.
"""

import os

from .env import env_bool, env_str, start
from .files import read_json, sibling_path
from .output import finish
from .procs import which

CHROME_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")

def chrome_binary():
    """``(path, configured)``: CHROME_BINARY resolved on PATH, else the first candidate found.

    ``path`` is None when nothing usable exists.
    """
    configured = env_str("CHROME_BINARY")
    if configured:
        return which(configured), configured
    for name in CHROME_CANDIDATES:
        path = which(name)
        if path:
            return path, None
    return None, None


def chrome_skip_reason(configured):
    if configured:
        return f"chromium not installed (CHROME_BINARY={configured} not found)"
    return "chromium not installed (none of " + ", ".join(CHROME_CANDIDATES) + " on PATH)"


def read_visit(snap=None):
    """What the ``chrome`` plugin's page load recorded (``chrome/navigation.json``), or None."""
    info = read_json(sibling_path("chrome", "navigation.json") if snap is None
                     else os.path.join(snap, "chrome", "navigation.json"), None)
    return info if isinstance(info, dict) else None


def rendered_title(snap=None):
    """The page's title after its scripts ran, as the browser saw it, or None."""
    visit = read_visit(snap)
    if not visit or "file" not in (visit.get("captures") or {}).get("title", {}):
        return None
    path = sibling_path("chrome", "title.txt") if snap is None else os.path.join(snap, "chrome", "title.txt")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip() or None
    except OSError:
        return None


def file_capture(plugin, output_name, validate):
    """The body of a capture plugin's hook: file the capture the ``chrome`` plugin made for
    ``plugin`` as ``output_name`` in this hook's folder.

    ``validate(path) -> (ok, details_or_reason)`` checks the file. Skipped when the
    ``chrome`` plugin is disabled or skipped (no Chromium: its reason is repeated); failed
    when the page load failed (an HTTP error, a network error) or this capture did.
    """
    start(plugin)
    if not env_bool("CHROME_ENABLED", True):
        finish("skipped", "the chrome plugin is disabled (CHROME_ENABLED=false): nothing loads the page")
    visit = read_visit()
    if visit is None:
        finish("failed", "the chrome plugin did not load the page (see its result)")
    if visit.get("skipped"):
        finish("skipped", visit["skipped"])
    if visit.get("error"):
        finish("failed", visit["error"])
    status = visit.get("status")
    if isinstance(status, int) and status >= 400:
        finish("failed", f"{status} {visit.get('status_text') or ''}".strip())
    if _content_type(visit) == "application/pdf":
        # The browser shows a PDF in its viewer (a black page in a headless screenshot): it
        # is not a page to capture. The PDF itself is the fetchers' (wget's) to keep.
        finish("skipped", "the URL is a PDF (application/pdf): the browser shows it in a viewer, not as a page to capture")
    item = (visit.get("captures") or {}).get(plugin)
    if item is None:
        finish("failed", f"the chrome plugin made no {plugin} capture (was {plugin.upper()}_ENABLED false for it?)")
    if "error" in item:
        finish("failed", f"{plugin} capture failed: {item['error']}")
    source = sibling_path("chrome", item["file"])
    if not os.path.isfile(source):
        finish("failed", f"{item['file']} is missing from the chrome plugin's folder")
    ok, detail = validate(source)
    if not ok:
        finish("failed", f"{plugin} capture is unusable: {detail}")
    _link(source, output_name)
    summary = {"bytes": os.path.getsize(output_name), "final_url": visit.get("final_url")}
    if isinstance(detail, dict):
        summary.update(detail)
    finish("succeeded", output_name, summary)


def _content_type(visit):
    headers = visit.get("headers") or {}
    value = next((v for k, v in headers.items() if str(k).lower() == "content-type"), "")
    return str(value).split(";")[0].strip().lower()


def _link(source, target):
    """Put ``source`` at ``target`` without a second copy on disk (a hard link; a copy on
    file systems without them)."""
    import shutil

    tmp = f".{target}.tmp{os.getpid()}"
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)
