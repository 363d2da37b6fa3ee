"""The web side: admin, task monitor, snapshot pages, archived files, health check, server.

Nothing here writes a row's status: user actions go through
:mod:`archivebox.tasks.actions`, which race with ticks by compare-and-swap.
"""
