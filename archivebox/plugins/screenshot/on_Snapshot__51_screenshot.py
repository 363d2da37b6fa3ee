#!/usr/bin/env python3
"""File the PNG screenshot the ``chrome`` plugin took in its page load (``screenshot.png``).

The whole page, or the window only with ``SCREENSHOT_FULL_PAGE=false`` (window size:
``CHROME_RESOLUTION``). Skipped when there is no Chromium (the chrome plugin says so).
"""

from archivebox import pluginkit

PLUGIN = "screenshot"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def validate(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if not head.startswith(PNG_SIGNATURE) or head[12:16] != b"IHDR":
        return False, "not a PNG file"
    width = int.from_bytes(head[16:20], "big")
    height = int.from_bytes(head[20:24], "big")
    return True, {"width": width, "height": height}


if __name__ == "__main__":
    pluginkit.file_capture(PLUGIN, "screenshot.png", validate)
