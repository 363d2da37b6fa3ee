#!/usr/bin/env python3
"""Save the page's DOM, serialized after its scripts ran, to ``output.html`` (headless Chromium).

Skipped when no Chromium binary is installed (``CHROME_BINARY``, else
chromium/chromium-browser/google-chrome on PATH).
"""
import os

from archivebox import pluginkit as H

PLUGIN = "dom"


def validate(path):
    size = os.path.getsize(path)
    if size == 0:
        return False, "empty DOM"
    with open(path, "rb") as f:
        head = f.read(2048).lower()
    if b"<html" not in head and b"<!doctype" not in head:
        return False, "output is not HTML"
    return True, {}


def main():
    H.chrome_hook(PLUGIN, "output.html", lambda tmp: ["--dump-dom"], validate, capture_stdout=True)


if __name__ == "__main__":
    main()
