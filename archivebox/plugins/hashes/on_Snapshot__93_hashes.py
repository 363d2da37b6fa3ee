#!/usr/bin/env python3
"""SHA-256 of every file of the snapshot, written to ``hashes.json``.

Covers every regular file under ``$SNAP_DIR`` except this hook's own folder
and the snapshot-level ``index.json``/``index.html`` (the engine rewrites them).
Symlinks are not followed. Files are streamed in 1 MiB chunks.
``hashes.json``: ``{"algorithm": "sha256", "files": {relative path: hex},
"total": {"files": N, "bytes": B, "sha256": digest of the sorted
"<hex>  <path>" lines}}``.
"""
import os

from archivebox import pluginkit

PLUGIN = "hashes"
CHUNK = 1024 * 1024
ROOT_EXCLUDES = {"index.json", "index.html"}


def hash_tree(snap, own_dir, deadline):
    import hashlib
    import time
    files = {}
    total_bytes = 0
    own_real = os.path.realpath(own_dir)
    for folder, dirs, names in os.walk(snap):
        dirs[:] = sorted(d for d in dirs
                         if not os.path.islink(os.path.join(folder, d))
                         and os.path.realpath(os.path.join(folder, d)) != own_real)
        at_root = os.path.realpath(folder) == os.path.realpath(snap)
        for name in sorted(names):
            if at_root and name in ROOT_EXCLUDES:
                continue
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            if time.monotonic() > deadline:
                raise TimeoutError
            digest = hashlib.sha256()
            size = 0
            try:
                with open(path, "rb") as f:
                    while True:
                        chunk = f.read(CHUNK)
                        if not chunk:
                            break
                        digest.update(chunk)
                        size += len(chunk)
            except FileNotFoundError:
                pluginkit.log(f"WARNING: {path} vanished while hashing")
                continue
            rel = os.path.relpath(path, snap).replace(os.sep, "/")
            files[rel] = digest.hexdigest()
            total_bytes += size
    return files, total_bytes


def main():
    pluginkit.start(PLUGIN)
    import hashlib
    import time
    snap = pluginkit.snap_dir()
    timeout = pluginkit.timeout_for(PLUGIN, 120)
    if not os.path.isdir(snap):
        pluginkit.finish("skipped", f"snapshot folder {snap} does not exist")
    try:
        files, total_bytes = hash_tree(snap, os.getcwd(), time.monotonic() + timeout)
    except TimeoutError:
        pluginkit.transient(f"hashing timed out after {timeout}s")
    manifest = "".join(f"{digest}  {path}\n" for path, digest in sorted(files.items()))
    total = {
        "files": len(files),
        "bytes": total_bytes,
        "sha256": hashlib.sha256(manifest.encode("utf-8", "surrogateescape")).hexdigest(),
    }
    pluginkit.write_json("hashes.json", {"algorithm": "sha256", "files": files, "total": total})
    pluginkit.finish("succeeded", f"{len(files)} files hashed", total)


if __name__ == "__main__":
    main()
