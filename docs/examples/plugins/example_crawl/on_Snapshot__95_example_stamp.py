#!/usr/bin/env python3
"""Example snapshot hook reading what its crawl-level hook prepared (docs/plugins.md).

Copies ``$CRAWL_DIR/example_crawl/setup.json`` into this snapshot as ``stamp.json``.
Without it (the crawl hook failed or was disabled) the result is ``noresults``.
"""
import os

from archivebox import pluginkit

PLUGIN = "example_crawl"


def main():
    args = pluginkit.start(PLUGIN)
    crawl_dir = pluginkit.env_str("CRAWL_DIR")
    setup = pluginkit.read_json(os.path.join(crawl_dir, PLUGIN, "setup.json")) if crawl_dir else None
    if not isinstance(setup, dict):
        pluginkit.finish("noresults", "the crawl hook left no setup.json")
    pluginkit.write_json("stamp.json", {**setup, "snapshot_id": args.get("snapshot_id"), "url": args["url"]})
    pluginkit.finish("succeeded", "stamp.json", {"label": setup.get("label")})


if __name__ == "__main__":
    main()
