"""A self-hosted web archiver whose background work is a reconciliation loop over DB rows."""

__version__ = "0.1.0"
