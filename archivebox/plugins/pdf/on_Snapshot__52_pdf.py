#!/usr/bin/env python3
"""Print the page to ``output.pdf`` with headless Chromium.

Skipped when no Chromium binary is installed (``CHROME_BINARY``, else
chromium/chromium-browser/google-chrome on PATH).
"""

from archivebox import pluginkit as H

PLUGIN = "pdf"


def validate(path):
    with open(path, "rb") as f:
        head = f.read(8)
    if not head.startswith(b"%PDF-"):
        return False, "not a PDF file"
    return True, {"version": head[5:8].decode("ascii", "replace").strip()}


def main():
    H.chrome_hook(
        PLUGIN, "output.pdf",
        lambda tmp: [f"--print-to-pdf={tmp}", "--no-pdf-header-footer"],
        validate,
    )


if __name__ == "__main__":
    main()
