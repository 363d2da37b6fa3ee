"""Binaries that hooks need, provisioned once per machine through abxpkg and recorded as Binary rows."""
