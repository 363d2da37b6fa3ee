"""Every side effect of the engine, in one list (connected at start-up by :mod:`archivebox.apps`)."""

from archivebox.sideeffects import crawl, hooks, index, results, snapshot, wake

SIDEEFFECTS = (
    crawl.crawl_started, crawl.create_root_snapshots, crawl.activate_snapshots, crawl.crawl_finished,
    snapshot.snapshot_started, snapshot.snapshot_finished,
    results.wake_step, results.result_finished, results.stop_background,
    hooks.run_hook,
    index.write_index, index.write_final_index,
    wake.wake_process_owner,
)
