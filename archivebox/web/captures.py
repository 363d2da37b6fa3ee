"""What a snapshot captured, read from its ArchiveResult rows, as things a page can preview.

A hook that succeeds names its main output file in ``output_str``, relative to its own
folder ``<snapshot dir>/<plugin>/`` (the hook's working directory), or else relative to the
snapshot's folder, as abx-plugins' hooks and ArchiveBox's own results name them (a snapshot
upgraded from an ArchiveBox collection keeps ``screenshot.png``, ``example.com/index.html``
where ArchiveBox wrote them). So the captures of a
snapshot are its succeeded results whose ``output_str`` is a regular file inside the
snapshot's folder; what kind of preview each gets (a sandboxed frame, an image, a PDF,
text) follows from the file's type, not from the plugin's name, so a renamed or third-party
plugin shows up too. Results that are not files (a title, a hash) are left out.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path

from archivebox.core.graphs import ArchiveResultGraph
from archivebox.web import files

IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
# Outputs that are icons or machine data, not a view of the page.
NOT_PREVIEWS = ("favicon", "hashes", "headers", "search")
# The order ArchiveBox users know: the saved page first, then its pictures and text.
KIND_ORDER = {"page": 0, "image": 1, "pdf": 2, "text": 3}
# Which capture opens first in the snapshot page's main frame, best first.
MAIN_PREFERENCE = ("wget", "singlefile", "dom", "readability", "screenshot")
THUMBNAIL_PLUGINS = ("screenshot",)
# How the fetchers report an HTTP error: "404 Not Found".
HTTP_ERROR = re.compile(r"^[45]\d\d\b")


@dataclass(frozen=True)
class Capture:
    plugin: str
    path: str  # relative to the snapshot's folder
    kind: str  # page | image | pdf | text
    size: int

    @property
    def label(self) -> str:
        return {"page": f"{self.plugin} (page)", "image": f"{self.plugin} (image)", "pdf": f"{self.plugin} (PDF)",
                "text": f"{self.plugin} (text)"}[self.kind]


def kind_of(path: str) -> str | None:
    """The preview kind of an output file by its name; None for files a page cannot show."""
    content_type, encoding = mimetypes.guess_type(path)
    if encoding or not content_type:
        return None
    if content_type in ("text/html", "application/xhtml+xml"):
        return "page"
    if content_type in IMAGE_TYPES:
        return "image"
    if content_type == "application/pdf":
        return "pdf"
    if content_type in ("text/plain", "text/markdown"):
        return "text"
    return None


def relative_output(plugin: str, output_str: str) -> str | None:
    """``<plugin>/<output_str>`` when ``output_str`` looks like a relative file path, else None."""
    name = output_str.strip()
    if not name or "\n" in name or name.startswith("/") or len(name) > 1024:
        return None
    return f"{plugin}/{name}"


def output_file(archive_dir: Path, snapshot_id, plugin: str, output_str: str) -> tuple[str, Path] | None:
    """The file ``output_str`` names (relative to the snapshot's folder) and its real path:
    in the plugin's folder first, else in the snapshot's folder; None if it names no file."""
    relative = relative_output(plugin, output_str)
    if relative is None:
        return None
    for candidate in (relative, output_str.strip()):
        try:
            return candidate, files.archived_file(archive_dir, str(snapshot_id), candidate)
        except files.Refused:
            continue
    return None


def of_snapshot(archive_dir: Path, snapshot_id, results) -> list[Capture]:
    """The previewable captures among ``results`` (rows or dicts with plugin, status, output_str)."""
    found: list[Capture] = []
    for result in results:
        plugin, status, output_str = _fields(result)
        if status != ArchiveResultGraph.succeeded or plugin in NOT_PREVIEWS:
            continue
        found_file = output_file(archive_dir, snapshot_id, plugin, output_str) if kind_of(output_str.strip()) else None
        if found_file is None:
            continue
        relative, target = found_file
        found.append(Capture(plugin, relative, kind_of(relative), target.stat().st_size))
    return sorted(found, key=lambda c: (KIND_ORDER[c.kind], c.plugin))


def main_capture(captures: list[Capture]) -> Capture | None:
    """The capture the snapshot page opens first: the saved page if there is one."""
    for plugin in MAIN_PREFERENCE:
        for capture in captures:
            if capture.plugin == plugin:
                return capture
    return captures[0] if captures else None


def thumbnail(captures: list[Capture]) -> Capture | None:
    """The screenshot of a snapshot (else any other image capture) for lists of snapshots."""
    images = [c for c in captures if c.kind == "image"]
    preferred = [c for c in images if c.plugin in THUMBNAIL_PLUGINS]
    return (preferred or images or [None])[0]


def _fields(result) -> tuple[str, str, str]:
    if isinstance(result, dict):
        return result["plugin"], result["status"], result["output_str"]
    return result.plugin, result.status, result.output_str


def http_error(results) -> str | None:
    """``"404 Not Found"`` when the page answered an HTTP error as it was archived (the
    ``headers`` plugin's record of the response), else None: the snapshot page says it once,
    at the top, above captures of that error page."""
    for result in results:
        if result.plugin != "headers" or not isinstance(result.output_json, dict):
            continue
        status = result.output_json.get("status")
        if isinstance(status, int) and status >= 400:
            return result.output_str if str(status) in result.output_str else f"HTTP {status}"
    return None
