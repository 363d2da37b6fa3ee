"""Chaos ledger hook (background service, step 1): runs until its snapshot's cleanup stops
it, then prints its succeeded record and exits 0 (see ledger.py)."""
import os
import sys

LEDGER = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "ledger.py")
exec(compile(open(LEDGER).read(), LEDGER, "exec"))  # noqa: S102 - the shared body beside this file
serve()  # noqa: F821 - defined by ledger.py
