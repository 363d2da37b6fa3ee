#!/usr/bin/env python3
"""File the page's DOM, serialized after its scripts ran, from the ``chrome`` plugin's page
load (``output.html``).

Skipped when there is no Chromium (the chrome plugin says so).
"""
import os

from archivebox import pluginkit

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


if __name__ == "__main__":
    pluginkit.file_capture(PLUGIN, "output.html", validate)
