"""When a snapshot's index files are written: at once on a change, a moment later at its start."""

from __future__ import annotations

import json

from archivebox.sideeffects import index as index_effects

from .util import make_snapshot, wait_until


def test_a_deferred_index_is_written_a_moment_later(monkeypatch):
    monkeypatch.setattr(index_effects, "DEBOUNCE", 0.2)
    snapshot = make_snapshot("https://example.com/deferred")
    target = snapshot.output_dir / "index.json"
    index_effects.DEBOUNCER.defer(snapshot.pk)
    index_effects.DEBOUNCER.defer(snapshot.pk)  # a second one folds into the first
    assert not target.exists()
    page = snapshot.output_dir / "index.html"  # written right after index.json
    wait_until(lambda: target.exists() and page.exists(), timeout=10, message="the deferred index write")
    assert json.loads(target.read_text())["url"] == "https://example.com/deferred"
    assert "https://example.com/deferred" in page.read_text()


def test_a_change_after_a_deferred_write_is_written_at_once(monkeypatch):
    monkeypatch.setattr(index_effects, "DEBOUNCE", 30)
    snapshot = make_snapshot("https://example.com/changed")
    index_effects.DEBOUNCER.defer(snapshot.pk)
    index_effects.write_index.run(snapshot.pk)  # e.g. a result finished: no waiting for the deferred write
    assert (snapshot.output_dir / "index.json").exists()
    index_effects.DEBOUNCER.forget(snapshot.pk)
