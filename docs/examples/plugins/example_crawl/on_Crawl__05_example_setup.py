#!/usr/bin/env python3
"""Example crawl-level hook (docs/plugins.md): runs once per crawl, before its snapshots.

Its CWD is ``<CRAWL_DIR>/example_crawl``; it writes ``setup.json`` there for the
snapshot hook of the same plugin (``on_Snapshot__95_example_stamp.py``) to read, the way
a real plugin would prepare something once for the whole crawl (a browser profile, a
login cookie, a downloaded model).
"""
import time

from archivebox import pluginkit

PLUGIN = "example_crawl"


def main():
    args = pluginkit.parse_args()  # a crawl hook gets --crawl-id (and --url: the crawl's first URL)
    label = pluginkit.env_str("EXAMPLE_CRAWL_LABEL", "example")
    pluginkit.write_json("setup.json", {"crawl_id": args.get("crawl_id"), "label": label, "at": time.time()})
    pluginkit.finish("succeeded", "setup.json", {"label": label})


if __name__ == "__main__":
    main()
