#!/bin/sh
# Chaos ledger hook (foreground, step 1, shell): the same ledger lines and lock as ledger.py.
url=""
snap=""
for arg in "$@"; do
    case "$arg" in
        --url=*) url="${arg#--url=}" ;;
        --snapshot-id=*) snap="${arg#--snapshot-id=}" ;;
    esac
done
hook="$(basename "$0")"
ledger="$DATA_DIR/chaos-ledger.log"
mkdir -p "$DATA_DIR/chaos-locks"
exec 9>>"$DATA_DIR/chaos-locks/$snap.$hook.lock"
if flock -n 9; then concurrent=""; else concurrent=" concurrent"; fi
trap 'echo "end $snap $hook $$ $(date +%s.%N) sigterm" >> "$ledger"; exit 143' TERM
echo "start $snap $hook $$ $(date +%s.%N)$concurrent" >> "$ledger"
case "${CHAOSLEDGER_SECONDS:-0}" in
    0|0.0|"")
        h=$(printf '%s' "$url $hook" | cksum | cut -d' ' -f1)
        ms=$((50 + h % 1451))
        secs="$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" ;;
    *) secs="$CHAOSLEDGER_SECONDS" ;;
esac
sleep "$secs"
trap '' TERM  # done: the record and the end line go together
echo '{"type":"ArchiveResult","status":"succeeded","output_str":"slept '"$secs"' s in pid '"$$"'"}'
echo "end $snap $hook $$ $(date +%s.%N) succeeded" >> "$ledger"
