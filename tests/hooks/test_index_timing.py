"""When a snapshot's index files are written: at once when it ends, never while its hooks run,
and a moment after a change that comes after its end (changes meanwhile fold into that write)."""

from __future__ import annotations

import json

from archivebox.core.models import Snapshot
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


def test_a_running_snapshot_gets_no_index_files(monkeypatch):
    monkeypatch.setattr(index_effects, "DEBOUNCE", 0.1)
    snapshot = make_snapshot("https://example.com/running")
    index_effects.write_index(snapshot.pk)  # one of its results was recorded
    ran = []
    index_effects.TIMERS.call_later(0.4, ran.append, True)  # past any write the change could have caused
    wait_until(lambda: ran, timeout=10, message="a moment past the debounce")
    assert not (snapshot.output_dir / "index.json").exists() and not (snapshot.output_dir / "index.html").exists()


def test_changes_after_the_end_fold_into_one_write_a_moment_later(monkeypatch):
    monkeypatch.setattr(index_effects, "DEBOUNCE", 0.3)
    snapshot = make_snapshot("https://example.com/changed")
    Snapshot.objects.filter(pk=snapshot.pk).update(status="sealed", retry_at=None)
    target = snapshot.output_dir / "index.json"
    for _ in range(3):  # e.g. three results of late background hooks recorded
        index_effects.write_index(snapshot.pk)
    assert not target.exists()
    wait_until(target.exists, timeout=10, message="the trailing index write")
    first = target.stat().st_ino
    ran = []
    index_effects.TIMERS.call_later(0.6, ran.append, True)  # past any second write the changes could have caused
    wait_until(lambda: ran, timeout=10, message="a moment past the debounce")
    assert target.stat().st_ino == first  # one write for the three changes


def test_the_write_at_seal_is_at_once_and_cancels_the_pending_one(monkeypatch):
    monkeypatch.setattr(index_effects, "DEBOUNCE", 0.3)
    snapshot = make_snapshot("https://example.com/sealed")
    target = snapshot.output_dir / "index.json"
    index_effects.write_index(snapshot.pk)
    index_effects.write_final_index(snapshot.pk)
    assert target.exists()
    written = target.stat().st_ino
    ran = []
    index_effects.TIMERS.call_later(0.6, ran.append, True)  # runs after the cancelled write would have
    wait_until(lambda: ran, timeout=10, message="a moment past the debounce")
    assert target.stat().st_ino == written
