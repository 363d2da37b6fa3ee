"""Discovery of hook scripts: where plugins come from, what a hook file name means, which run."""

from __future__ import annotations

import logging
import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from archivebox.hooks import catalog as catalog_module
from archivebox.hooks.catalog import PluginCatalog, layers
from archivebox.hooks.discovery import (
    BUILTIN_PLUGINS_DIR,
    find_hooks,
    find_plugins,
    is_background,
    parse_hook_name,
    plugin_dirs,
)

from .util import collection, results


def make_plugin(root: Path, name: str, *files: str, config: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    for file in files:
        (folder / file).write_text("#!/bin/sh\necho '{\"type\":\"ArchiveResult\",\"status\":\"succeeded\"}'\n")
    if config is not None:
        (folder / "config.json").write_text(config)
    return folder


# File names -------------------------------------------------------------------------

@pytest.mark.parametrize("name, model, step, order, background, labels, ext", [
    ("on_Snapshot__54_title.py", "Snapshot", 5, 54, False, (), "py"),
    ("on_Snapshot__00_first.sh", "Snapshot", 0, 0, False, (), "sh"),
    ("on_Snapshot__63_media.bg.py", "Snapshot", 6, 63, True, ("bg",), "py"),
    ("on_Snapshot__64_gallery.finite.bg.py", "Snapshot", 6, 64, True, ("finite", "bg"), "py"),
    ("on_Crawl__01_chrome.daemon.bg.js", "Crawl", 0, 1, True, ("daemon", "bg"), "js"),
    ("on_Snapshot__20_x.bg.finite.sh", "Snapshot", 2, 20, True, ("bg", "finite"), "sh"),
    ("on_Snapshot__99_last.sh", "Snapshot", 9, 99, False, (), "sh"),
    # "bg" must be a label of its own, not part of the name or of another label
    ("on_Snapshot__10_bg.py", "Snapshot", 1, 10, False, (), "py"),
    ("on_Snapshot__10_bgsave.py", "Snapshot", 1, 10, False, (), "py"),
    ("on_Snapshot__10_x.bgx.py", "Snapshot", 1, 10, False, ("bgx",), "py"),
    ("on_Snapshot__10_x.nobg.py", "Snapshot", 1, 10, False, ("nobg",), "py"),
    # no number: step 9
    ("on_Snapshot__cleanup.sh", "Snapshot", 9, 99, False, (), "sh"),
    ("on_Snapshot__cleanup.bg.py", "Snapshot", 9, 99, True, ("bg",), "py"),
])
def test_a_hook_file_name_gives_model_step_order_and_background(name, model, step, order, background, labels, ext):
    hook = parse_hook_name(Path("/plugins/p") / name, "p")
    assert hook is not None
    assert (hook.model, hook.step, hook.order, hook.background, hook.labels, hook.ext) == (model, step, order, background, labels, ext)
    assert hook.hook_name == name and hook.plugin == "p"
    # the runtime helper agrees with the parse
    assert is_background(name) == background


@pytest.mark.parametrize("name", [
    "README.md", "config.json", "helper.py", "on_Snapshot_10_one_underscore.py", "on_Snapshot__10_noext",
    "on__10_nomodel.py", "on_Snapshot__10_sp ace.py", "xon_Snapshot__10_x.py",
])
def test_names_that_are_not_hooks(name):
    assert parse_hook_name(Path(name), "p") is None


def test_an_unnumbered_hook_logs_a_warning_naming_it(engine_logs):
    parse_hook_name(Path("on_Snapshot__cleanup.sh"), "tidy")
    warnings = [r.getMessage() for r in engine_logs.records if r.levelno == logging.WARNING]
    assert any("tidy/on_Snapshot__cleanup.sh" in w and "step 9" in w for w in warnings), warnings
    engine_logs.clear()
    parse_hook_name(Path("on_Snapshot__90_numbered.sh"), "tidy")
    assert not [r for r in engine_logs.records if r.levelno >= logging.WARNING]


# Plugin directories ---------------------------------------------------------------------

def test_plugin_dirs_are_builtin_then_data_dir_then_plugin_dirs_in_order(tmp_path):
    extra = os.pathsep.join([str(tmp_path / "one"), "", "  ", str(tmp_path / "two")])
    assert plugin_dirs(tmp_path / "data", extra) == [BUILTIN_PLUGINS_DIR, tmp_path / "data" / "plugins", tmp_path / "one", tmp_path / "two"]
    assert plugin_dirs(tmp_path / "data", "") == [BUILTIN_PLUGINS_DIR, tmp_path / "data" / "plugins"]
    assert (BUILTIN_PLUGINS_DIR / "title").is_dir()


def test_a_later_plugin_dir_overrides_a_plugin_of_the_same_name(tmp_path):
    first = make_plugin(tmp_path / "one", "shared", "on_Snapshot__10_a.sh")
    make_plugin(tmp_path / "one", "only_one", "on_Snapshot__10_b.sh")
    second = make_plugin(tmp_path / "two", "shared", "on_Snapshot__20_c.sh")
    make_plugin(tmp_path / "two", "_lib", "on_Snapshot__10_helper.sh")  # "_" and "." folders are not plugins
    make_plugin(tmp_path / "two", ".hidden", "on_Snapshot__10_hidden.sh")
    (tmp_path / "two" / "not_a_dir").write_text("x")
    plugins = find_plugins([tmp_path / "one", tmp_path / "missing", tmp_path / "two"])
    assert plugins == {"shared": second, "only_one": tmp_path / "one" / "only_one"}
    assert [h.hook_name for h in find_hooks(plugins, "Snapshot")] == ["on_Snapshot__10_b.sh", "on_Snapshot__20_c.sh"]
    # and the other way round
    assert find_plugins([tmp_path / "two", tmp_path / "one"])["shared"] == first


def test_hooks_are_ordered_by_step_then_name_whatever_the_creation_order(tmp_path):
    names = {
        "alpha": ["on_Snapshot__50_z.py", "on_Snapshot__05_b.sh", "on_Snapshot__unnumbered.sh", "on_Crawl__00_c.py"],
        "beta": ["on_Snapshot__51_a.bg.py", "on_Snapshot__05_a.sh", "on_Snapshot__99_y.sh", "notes.txt"],
        "gamma": ["on_Snapshot__10_m.js", "on_Snapshot__19_n.sh"],
    }
    files = [(plugin, name) for plugin, items in names.items() for name in items]
    random.Random(3).shuffle(files)
    for plugin, name in files:
        make_plugin(tmp_path, plugin, name)
    plugins = find_plugins([tmp_path])
    hooks = find_hooks(plugins, "Snapshot")
    assert [(h.step, h.hook_name) for h in hooks] == [
        (0, "on_Snapshot__05_a.sh"), (0, "on_Snapshot__05_b.sh"), (1, "on_Snapshot__10_m.js"), (1, "on_Snapshot__19_n.sh"),
        (5, "on_Snapshot__50_z.py"), (5, "on_Snapshot__51_a.bg.py"), (9, "on_Snapshot__99_y.sh"), (9, "on_Snapshot__unnumbered.sh"),
    ]
    assert [h.hook_name for h in find_hooks(plugins, "Crawl")] == ["on_Crawl__00_c.py"]
    assert find_hooks(plugins, "Snapshot") == hooks  # deterministic


# Selection: PLUGINS and <PLUGIN>_ENABLED ---------------------------------------------------

@pytest.fixture
def three_plugins(tmp_path):
    make_plugin(tmp_path, "one", "on_Snapshot__10_one.sh")
    make_plugin(tmp_path, "two", "on_Snapshot__20_two.sh")
    make_plugin(tmp_path, "off", "on_Snapshot__30_off.sh",
                config='{"type": "object", "properties": {"OFF_ENABLED": {"type": "boolean", "default": false}}}')
    return PluginCatalog([tmp_path])


def names(cat: PluginCatalog, **layer_kwargs) -> list[str]:
    return [h.hook_name for h in cat.hooks_for("Snapshot", layers(**layer_kwargs))]


def test_every_plugin_runs_without_an_allow_list_unless_disabled(three_plugins):
    assert names(three_plugins, environ={}) == ["on_Snapshot__10_one.sh", "on_Snapshot__20_two.sh"]
    assert names(three_plugins, environ={"OFF_ENABLED": "true"}) == ["on_Snapshot__10_one.sh", "on_Snapshot__20_two.sh", "on_Snapshot__30_off.sh"]


def test_the_plugins_allow_list_selects_case_insensitively(three_plugins):
    assert names(three_plugins, environ={"PLUGINS": "TWO, one"}) == ["on_Snapshot__10_one.sh", "on_Snapshot__20_two.sh"]
    assert names(three_plugins, environ={"PLUGINS": "two"}) == ["on_Snapshot__20_two.sh"]
    assert names(three_plugins, environ={"PLUGINS": "nosuchplugin"}) == []
    # a crawl's own allow-list wins over the environment's
    assert names(three_plugins, environ={"PLUGINS": "one"}, crawl_config={"PLUGINS": "two"}) == ["on_Snapshot__20_two.sh"]


def test_plugin_enabled_flags_turn_plugins_off_and_on_per_layer(three_plugins):
    assert names(three_plugins, environ={"ONE_ENABLED": "false"}) == ["on_Snapshot__20_two.sh"]
    assert names(three_plugins, environ={"ONE_ENABLED": "false"}, crawl_config={"ONE_ENABLED": "true"}) == \
        ["on_Snapshot__10_one.sh", "on_Snapshot__20_two.sh"]
    assert names(three_plugins, environ={}, file_values={"TWO_ENABLED": "no"}) == ["on_Snapshot__10_one.sh"]
    # a plugin chosen by name runs even when disabled (by default or in the config), as
    # ArchiveBox's --plugins does, and its hook is told it is enabled
    assert names(three_plugins, environ={"PLUGINS": "one,off"}) == ["on_Snapshot__10_one.sh", "on_Snapshot__30_off.sh"]
    assert names(three_plugins, environ={"PLUGINS": "off", "OFF_ENABLED": "false"}) == ["on_Snapshot__30_off.sh"]
    assert three_plugins.resolved("off", layers(environ={"PLUGINS": "off"}))["OFF_ENABLED"] is True
    assert three_plugins.resolved("off", layers(environ={}))["OFF_ENABLED"] is False


def test_the_catalog_notices_a_new_hook_and_a_new_plugin(tmp_path):
    make_plugin(tmp_path, "one", "on_Snapshot__10_one.sh")
    cat = PluginCatalog([tmp_path])
    assert names(cat, environ={}) == ["on_Snapshot__10_one.sh"]
    make_plugin(tmp_path, "one", "on_Snapshot__05_early.sh")
    os.utime(tmp_path / "one", ns=(1, 1))  # a different mtime even on a coarse clock
    assert names(cat, environ={}) == ["on_Snapshot__05_early.sh", "on_Snapshot__10_one.sh"]
    make_plugin(tmp_path, "late", "on_Snapshot__90_late.sh")
    os.utime(tmp_path, ns=(2, 2))
    assert names(cat, environ={}) == ["on_Snapshot__05_early.sh", "on_Snapshot__10_one.sh", "on_Snapshot__90_late.sh"]


def test_the_catalog_notices_a_config_json_edited_in_place(tmp_path):
    """Editing a file does not change its folder's mtime: the config file's own mtime counts."""
    make_plugin(tmp_path, "one", "on_Snapshot__10_one.sh",
                config='{"type": "object", "properties": {"ONE_ENABLED": {"type": "boolean", "default": true}}}')
    cat = PluginCatalog([tmp_path])
    assert names(cat, environ={}) == ["on_Snapshot__10_one.sh"]
    folder_mtime = (tmp_path / "one").stat().st_mtime_ns
    config = tmp_path / "one" / "config.json"
    with open(config, "r+") as f:  # rewritten in place, as an editor saving without renaming does
        f.write(config.read_text().replace("true", "false"))
        f.truncate()
    os.utime(config, ns=(3, 3))
    os.utime(tmp_path / "one", ns=(folder_mtime, folder_mtime))
    assert names(cat, environ={}) == []


def test_the_process_wide_catalog_looks_at_the_folders_at_most_once_per_interval(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(catalog_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))  # this module's clock only
    make_plugin(tmp_path, "one", "on_Snapshot__10_one.sh")
    cat = PluginCatalog([tmp_path], recheck_every=catalog_module.RECHECK_EVERY)
    assert names(cat, environ={}) == ["on_Snapshot__10_one.sh"]
    make_plugin(tmp_path, "late", "on_Snapshot__90_late.sh")
    os.utime(tmp_path, ns=(2, 2))
    assert names(cat, environ={}) == ["on_Snapshot__10_one.sh"]  # not looked at again yet
    clock[0] += catalog_module.RECHECK_EVERY
    assert names(cat, environ={}) == ["on_Snapshot__10_one.sh", "on_Snapshot__90_late.sh"]


def test_the_process_wide_catalog_is_keyed_by_data_dir_and_plugin_dirs(tmp_path):
    a = catalog_module.catalog(tmp_path / "d1", "")
    assert catalog_module.catalog(tmp_path / "d1", "") is a
    assert catalog_module.catalog(tmp_path / "d2", "") is not a
    assert catalog_module.catalog(tmp_path / "d1", str(tmp_path)) is not a


# End to end --------------------------------------------------------------------------

def echo_hook(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"#!/bin/sh\necho '{{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"{text}\"}}'\n")


def test_end_to_end_data_dir_plugins_and_plugin_dirs_override_in_order(tmp_path):
    """Built-in ``title`` is replaced by the data dir's; PLUGIN_DIRS' second entry beats its first."""
    one, two = tmp_path / "one", tmp_path / "two"
    echo_hook(one / "h_over", "on_Snapshot__10_over.sh", "from dir one")
    echo_hook(one / "h_solo", "on_Snapshot__20_solo.sh", "only in dir one")
    echo_hook(two / "h_over", "on_Snapshot__11_over.sh", "from dir two")
    coll = collection(tmp_path, "title,h_over,h_solo", PLUGIN_DIRS=os.pathsep.join([str(one), str(two)]))
    echo_hook(coll.root / "plugins" / "title", "on_Snapshot__54_title.sh", "from the data dir")
    coll.cli("add", "https://example.com/over")
    got = {hook: (r["status"], r["output_str"]) for (_, hook), r in results(coll).items()}
    assert got == {
        "on_Snapshot__11_over.sh": ("succeeded", "from dir two"),
        "on_Snapshot__20_solo.sh": ("succeeded", "only in dir one"),
        "on_Snapshot__54_title.sh": ("succeeded", "from the data dir"),
    }
