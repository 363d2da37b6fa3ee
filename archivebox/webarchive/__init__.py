"""The collection's web archive: WARC files, their index, deduplication, export and replay.

See ``docs/web-archive.md`` for the layout on disk and how the pieces fit.
"""
