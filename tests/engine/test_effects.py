"""Side effects are types: every one declared has exactly one function carrying it out,
with the effect's fields as its parameters, and every place in the engine that asks for
one (a transition, a tick path) names a declared class with arguments that fit it."""

from __future__ import annotations

import ast
import dataclasses
import gc
import inspect
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import OperationalError

import archivebox
from archivebox.core import diskspace
from archivebox.sideeffects import queue, registry
from archivebox.transitions import effects
from archivebox.transitions.effects import Effect, RunHook, effect_classes

PACKAGE = Path(archivebox.__file__).parent


def test_every_declared_side_effect_has_one_task_whose_parameters_are_its_fields():
    assert queue.unhandled() == []
    registry.check()
    assert set(queue.TASKS) == set(effect_classes())
    for cls, task in queue.TASKS.items():
        assert task.name.startswith("sideeffect.")
        function = inspect.unwrap(task.func)
        assert list(inspect.signature(function).parameters) == [field.name for field in dataclasses.fields(cls)], cls


def requests_in_the_code() -> list[tuple[str, int, str, ast.Call]]:
    """Every call of a side-effect class in the engine's code: (file, line, class, call)."""
    declared = {cls.__name__ for cls in effect_classes()}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
                if name in declared:
                    found.append((str(path.relative_to(PACKAGE)), node.lineno, name, node))
    return found


def test_every_request_in_the_transitions_and_ticks_fits_its_class():
    by_name = {cls.__name__: cls for cls in effect_classes()}
    found = requests_in_the_code()
    asking = {where.split("/")[0] for where, *_ in found}
    assert {"transitions", "tasks"} <= asking, asking  # the transitions and the tick paths both ask for effects
    assert {name for *_, name, _ in found} == set(by_name)  # nothing declared that nobody asks for
    for where, line, name, call in found:
        fields = dataclasses.fields(by_name[name])
        required = [f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        given = len(call.args)
        keywords = {k.arg for k in call.keywords}
        assert not any(isinstance(a, ast.Starred) for a in call.args), f"{where}:{line}"
        assert given <= len(fields), f"{where}:{line}: {name} takes {len(fields)} arguments, given {given}"
        assert keywords <= {f.name for f in fields}, f"{where}:{line}: {name} has no field {keywords - {f.name for f in fields}}"
        assert set(required[:given]) | keywords >= set(required), f"{where}:{line}: {name} needs {required}"


def test_a_function_whose_parameters_do_not_fit_its_effect_is_refused_at_import():
    @dataclasses.dataclass(frozen=True)
    class Probe(Effect):
        thing_id: uuid.UUID

    try:
        with pytest.raises(TypeError, match=r"parameters must be \['thing_id'\]"):
            queue.sideeffect(Probe)(lambda other_id: None)
        assert queue.unhandled() == ["Probe"]
        with pytest.raises(registry.Unhandled, match="Probe"):
            registry.check()
    finally:
        del Probe
        gc.collect()
    assert queue.unhandled() == []


def test_a_request_goes_to_the_task_of_its_class(monkeypatch):
    sent = []
    monkeypatch.setitem(queue.TASKS, RunHook, lambda *args: sent.append(args))
    result_id = uuid.uuid4()
    RunHook(result_id, 2)()
    assert sent == [(result_id, 2)]
    assert RunHook(result_id, 2).key == f"RunHook:{result_id}:2"


def test_without_a_connection_a_request_says_so(monkeypatch):
    monkeypatch.setattr(effects.SENDER, "send_to", None)
    with pytest.raises(effects.NotConnected, match="RunHook"):
        RunHook(uuid.uuid4(), 1)()


def test_a_side_effect_that_meets_a_full_disk_says_so_in_one_line_not_a_traceback(caplog, monkeypatch):
    """Regression: a side effect whose write met a full disk logged its traceback (a
    foreground ``add`` on a disk that filled up printed it)."""

    @dataclasses.dataclass(frozen=True)
    class FillsDisk(Effect):
        thing_id: uuid.UUID

    def carry_out(thing_id):
        raise OperationalError("database or disk is full") from None

    monkeypatch.setitem(diskspace._state, "since", None)
    monkeypatch.setitem(diskspace._state, "said", 0.0)
    try:
        task = queue.sideeffect(FillsDisk)(carry_out)
        with caplog.at_level("INFO"):
            task.call_local(uuid.uuid4())
    finally:
        del queue.TASKS[FillsDisk]
        del FillsDisk
        gc.collect()
    said = [r for r in caplog.records if r.levelname in ("ERROR", "WARNING")]
    assert [r.getMessage().split(" (")[0] for r in said] == [f"disk full: {settings.DATA_DIR}"]
    assert not any(r.exc_info for r in said)


def test_a_tick_whose_slot_hand_over_meets_a_full_disk_says_so_in_one_line_not_a_traceback(caplog, monkeypatch):
    """Regression (CI, tests/test_disk_full.py): a tick batch whose last write, giving its slot
    back, met a full disk left Huey to log 'Unhandled exception' with the traceback. The
    slot's lease expires on its own; the tick says disk full once and ends."""
    from archivebox.core import leases
    from archivebox.tasks import ticks

    def release_slot(slot, holder):
        raise OperationalError("database or disk is full") from None

    monkeypatch.setattr(leases, "release_slot", release_slot)
    monkeypatch.setitem(diskspace._state, "since", None)
    monkeypatch.setitem(diskspace._state, "said", 0.0)
    with caplog.at_level("INFO"):
        ticks.tick.call_local("Crawl", [], None, "slot:Crawl:0", "a-holder")
    said = [r for r in caplog.records if r.levelname in ("ERROR", "WARNING")]
    assert [r.getMessage().split(" (")[0] for r in said] == [f"disk full: {settings.DATA_DIR}"]
    assert not any(r.exc_info for r in said)
