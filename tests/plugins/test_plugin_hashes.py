"""hashes hook: sha256 of every file of the snapshot."""
import hashlib
import json
import os


def test_hashes_of_snapshot_files(site, snapshot_factory):
    snap = snapshot_factory(site.url("/page-12.html"))
    assert snap.run("wget").status == "succeeded"
    assert snap.run("title").status == "succeeded"
    for name in ("index.json", "index.html"):
        with open(os.path.join(snap.dir, name), "w") as f:
            f.write("engine-owned\n")
    os.makedirs(os.path.join(snap.dir, "extra", "deep"))
    big = os.path.join(snap.dir, "extra", "deep", "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(3 * 1024 * 1024 + 17))
    os.symlink(big, os.path.join(snap.dir, "extra", "link.bin"))
    os.makedirs(os.path.join(snap.dir, "hashes"), exist_ok=True)
    with open(os.path.join(snap.dir, "hashes", "stale.txt"), "w") as f:
        f.write("own output is excluded\n")

    run = snap.run("hashes")
    assert run.returncode == 0 and run.status == "succeeded", run
    data = json.loads(open(run.path("hashes.json")).read())
    expected = {}
    for folder, dirs, names in os.walk(snap.dir):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, snap.dir)
            if rel.startswith("hashes/") or rel in ("index.json", "index.html") or os.path.islink(path):
                continue
            with open(path, "rb") as f:
                expected[rel] = hashlib.sha256(f.read()).hexdigest()
    assert data["files"] == expected
    assert "extra/deep/big.bin" in data["files"] and "extra/link.bin" not in data["files"]
    assert data["total"]["files"] == len(expected)
    assert data["total"]["bytes"] == sum(os.path.getsize(os.path.join(snap.dir, p)) for p in expected)
    manifest = "".join(f"{d}  {p}\n" for p, d in sorted(expected.items()))
    assert data["total"]["sha256"] == hashlib.sha256(manifest.encode()).hexdigest()
    assert run.result["output_str"] == f"{len(expected)} files hashed"


def test_hashes_empty_snapshot(snapshot_factory):
    run = snapshot_factory("http://127.0.0.1:9/").run("hashes")
    assert run.status == "succeeded" and run.result["output_str"] == "0 files hashed", run
