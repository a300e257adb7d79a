#!/usr/bin/env bash
# One device session's work in one call: environment facts, preflight, the suites, logs and run tarballs to $OUT.
# Usage, from the repository root on the GPU machine:
#   scripts/device-session.sh start [[run:|profile:]suite ...]   # start the suites in the background (default
#                                                 profile; tests/gpu holds test-only suites), wait up to WAIT seconds, collect
#   scripts/device-session.sh collect             # wait for a started session to finish (up to WAIT), collect
# The suites run in their own process session (setsid) so they outlive a call that hits the device tool's
# 10-minute limit; $OUT returns at most 8 files, so every run directory travels in one tarball.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
WAIT=${WAIT:-540}
WORK=/tmp/gpu-lab-session
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
mkdir -p "$OUT" "$WORK/runs"

suites() {
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw --format=csv
  "$BIN" --version && "$BIN" devices && "$BIN" doctor
  for item in "$@"; do
    mode=profile; suite=$item
    case $item in run:*|profile:*) mode=${item%%:*}; suite=${item#*:} ;; esac
    echo "== $mode --suite $suite"
    start=$(date +%s)
    "$BIN" "$mode" --suite "$suite" --suite-dir tests/gpu --timeout 20 --out "$WORK/runs"
    echo "== exit code $? after $(( $(date +%s) - start )) s"
  done
  echo "== done"
}

if [ "${1:-start}" = start ]; then
  shift || true
  [ $# -gt 0 ] || set -- transpose
  export -f suites; export BIN WORK
  setsid bash -c 'suites "$@"' _ "$@" > "$WORK/session.log" 2>&1 < /dev/null &
fi
for _ in $(seq "$WAIT"); do
  grep -q '^== done' "$WORK/session.log" 2>/dev/null && break
  sleep 1
done
cp "$WORK/session.log" "$OUT/"
tar -C "$WORK/runs" -czf "$OUT/runs.tar.gz" .
tail -n 40 "$WORK/session.log"
