#!/usr/bin/env python3
"""File the PDF the ``chrome`` plugin printed in its page load (``output.pdf``).

Skipped when there is no Chromium (the chrome plugin says so).
"""

from archivebox import pluginkit

PLUGIN = "pdf"


def validate(path):
    with open(path, "rb") as f:
        head = f.read(8)
    if not head.startswith(b"%PDF-"):
        return False, "not a PDF file"
    return True, {"version": head[5:8].decode("ascii", "replace").strip()}


if __name__ == "__main__":
    pluginkit.file_capture(PLUGIN, "output.pdf", validate)
