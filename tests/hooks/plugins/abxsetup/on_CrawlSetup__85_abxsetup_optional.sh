# Exits 10 (abx-dl's PROCESS_EXIT_SKIPPED): nothing to set up here.
echo "no extension configured, nothing to set up" >&2
exit 10
