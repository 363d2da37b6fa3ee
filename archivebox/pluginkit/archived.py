"""The resources a page load archived, by URL: for hooks that build a view of the page
(an article, a summary) from the archived copies of its images rather than the live site.

:class:`Archived` reads them, on first use, from the chrome plugin's single-file copy
(``chrome/page.mhtml``: every resource the page showed, by its ``Content-Location``),
else from its WARC recording (``chrome/warc/*.warc.gz``: the responses whose payload is
in the file; a payload deduplicated into an earlier snapshot is not, and is not found).
"""

import os

from .files import snap_dir
from .output import log

MAX_RESOURCES = 2000


class Archived:
    def __init__(self, snap=None):
        self.folder = os.path.join(snap or snap_dir(), "chrome")
        self._found = None

    def get(self, url):
        """``(content_type, bytes)`` of ``url`` as the page load archived it, or None."""
        if self._found is None:
            self._found = {}
            self._read_mhtml(os.path.join(self.folder, "page.mhtml"))
            self._read_warcs(os.path.join(self.folder, "warc"))
        return self._found.get(url.split("#", 1)[0])

    def _read_mhtml(self, path):
        import email
        import email.policy

        if not os.path.isfile(path):
            return
        try:
            with open(path, "rb") as f:
                message = email.message_from_binary_file(f, policy=email.policy.default)
        except (OSError, ValueError) as err:
            log(f"cannot read {path}: {err}")
            return
        for part in message.walk():
            location = part.get("Content-Location")
            if not location or part.is_multipart() or len(self._found) >= MAX_RESOURCES:
                continue
            payload = part.get_payload(decode=True)
            if payload:
                self._found.setdefault(location, (part.get_content_type(), payload))

    def _read_warcs(self, folder):
        if not os.path.isdir(folder):
            return
        from warcio.archiveiterator import ArchiveIterator

        for name in sorted(os.listdir(folder)):
            if not name.endswith(".warc.gz"):
                continue
            try:
                with open(os.path.join(folder, name), "rb") as f:
                    for record in ArchiveIterator(f):
                        if record.rec_type != "response" or len(self._found) >= MAX_RESOURCES:
                            continue
                        url = record.rec_headers.get_header("WARC-Target-URI")
                        status = record.http_headers.get_statuscode() if record.http_headers else ""
                        if url and status == "200" and url not in self._found:
                            kind = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip()
                            self._found[url] = (kind, record.content_stream().read())
            except Exception as err:  # warcio's errors are plain Exceptions; a broken file is skipped
                log(f"cannot read {name}: {type(err).__name__}: {err}")
