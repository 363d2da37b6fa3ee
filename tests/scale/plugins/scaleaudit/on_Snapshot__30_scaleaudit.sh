#!/bin/sh
# Test hook: records its run in $DATA_DIR/hook-audit.log ("hook-start|hook-end URL PID TIME"),
# taking SCALEAUDIT_SECONDS in between, so a test can tell whether two runs of it for one
# URL ever overlapped (one short append per line: lines of many hooks never interleave).
url=""
for arg in "$@"; do
    case "$arg" in --url=*) url="${arg#--url=}" ;; esac
done
echo "hook-start $url $$ $(date +%s.%N)" >> "$DATA_DIR/hook-audit.log"
sleep "${SCALEAUDIT_SECONDS:-0.2}"
echo "hook-end $url $$ $(date +%s.%N)" >> "$DATA_DIR/hook-audit.log"
echo '{"type":"ArchiveResult","status":"succeeded","output_str":"audited"}'
