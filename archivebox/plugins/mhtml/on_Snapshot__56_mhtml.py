#!/usr/bin/env python3
"""File the single-file MHTML copy of the page (``page.mhtml``: the page and its
resources in one MIME document, Chromium's ``Page.captureSnapshot``) from the ``chrome``
plugin's page load.

Skipped when there is no Chromium (the chrome plugin says so).
"""

from archivebox import pluginkit

PLUGIN = "mhtml"


def validate(path):
    with open(path, "rb") as f:
        head = f.read(4096)
    if b"MIME-Version" not in head and b"Content-Type: multipart/related" not in head:
        return False, "not an MHTML document"
    return True, {}


if __name__ == "__main__":
    pluginkit.file_capture(PLUGIN, "page.mhtml", validate)
