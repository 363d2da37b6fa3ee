#!/usr/bin/env python3
"""Save a PNG screenshot of the page (``screenshot.png``) with headless Chromium.

Window size from ``SCREENSHOT_RESOLUTION`` (``WIDTH,HEIGHT``). Skipped when no
Chromium binary is installed (``CHROME_BINARY``, else chromium/chromium-browser/
google-chrome on PATH).
"""

from archivebox import pluginkit as H

PLUGIN = "screenshot"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def resolution():
    value = H.env_str("SCREENSHOT_RESOLUTION", "1440,2000", fallbacks=("RESOLUTION",))
    try:
        width, height = (int(v) for v in value.replace("x", ",").split(",", 1))
    except ValueError:
        H.log(f"WARNING: invalid SCREENSHOT_RESOLUTION {value!r}, using 1440,2000")
        width, height = 1440, 2000
    return max(100, min(width, 10000)), max(100, min(height, 20000))


def validate(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if not head.startswith(PNG_SIGNATURE) or head[12:16] != b"IHDR":
        return False, "not a PNG file"
    width = int.from_bytes(head[16:20], "big")
    height = int.from_bytes(head[20:24], "big")
    return True, {"width": width, "height": height}


def main():
    width, height = resolution()
    H.chrome_hook(
        PLUGIN, "screenshot.png",
        lambda tmp: [f"--screenshot={tmp}", f"--window-size={width},{height}"],
        validate,
    )


if __name__ == "__main__":
    main()
