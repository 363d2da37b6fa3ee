#!/bin/sh
# Example shell hook (docs/plugins.md): the size of the snapshot folder, saved to du.txt.
#
# Runs in step 9, after the hooks that write files. Its CWD is its own output folder
# <SNAP_DIR>/example_du; its config arrives as env vars (defaults from config.json).
# Exit 0 with a record = final status; a non-zero exit = transient error, retried later.
set -eu

url=""
for arg in "$@"; do
    case "$arg" in
        --url=*) url="${arg#--url=}" ;;
    esac
done

result() {  # status, output_str (plain text: no quotes or backslashes)
    printf '{"type": "ArchiveResult", "status": "%s", "output_str": "%s"}\n' "$1" "$2"
}

if [ -z "$url" ]; then
    result failed "missing --url argument"
    exit 0
fi
if ! command -v du >/dev/null 2>&1; then
    result skipped "du is not installed"
    exit 0
fi

kb=$(du -sk --exclude=example_du "${SNAP_DIR:-..}" | cut -f1)
echo "$kb" > du.txt
echo "measured ${SNAP_DIR:-..}: ${kb} KiB" >&2    # logs go to stderr; stdout is for records

if [ "$kb" -gt "$EXAMPLE_DU_MAX_KB" ]; then
    result failed "the snapshot uses ${kb} KiB, more than EXAMPLE_DU_MAX_KB=${EXAMPLE_DU_MAX_KB}"
    exit 0
fi
result succeeded "${kb} KiB"
