#!/usr/bin/env bash
# Runs a command on the GPU host past one device call's 10-minute limit: `start NAME CMD...` runs
# CMD in a session of its own (a device call's end kills only its own processes) with its output in
# /tmp/gpu-lab-bg/NAME/log and its exit code in .../rc once it ends; `wait NAME SECONDS` returns when
# that exit code exists (printing DONE and it) or after SECONDS (printing WAITING and the log's
# tail). Issue the next call at once, alone: a host left idle for 30 s is given back, the command
# with it, and every host goes back after 30 minutes held. (A wait issued beside a long local
# command returns only when both end; a 20-minute suite run was lost that way on 2026-11-23.) Completion is the rc file, never a process
# search (a search for the command's name also finds the call that searches).
set -uo pipefail
BASE=/tmp/gpu-lab-bg
case "${1:-}" in
  start)
    [ $# -ge 3 ] || { echo "usage: $0 start NAME CMD..." >&2; exit 2; }
    dir=$BASE/$2; shift 2
    rm -rf "$dir"; mkdir -p "$dir"
    setsid bash -c '"$@" > "$0/log" 2>&1; echo $? > "$0/rc"' "$dir" "$@" < /dev/null > /dev/null 2>&1 &
    echo "started: $dir"
    ;;
  wait)
    [ $# -eq 3 ] || { echo "usage: $0 wait NAME SECONDS" >&2; exit 2; }
    dir=$BASE/$2
    [ -d "$dir" ] || { echo "no background command named $2 (was it started on this host?)" >&2; exit 2; }
    for _ in $(seq 1 "$3"); do
      if [ -s "$dir/rc" ]; then echo "DONE rc=$(cat "$dir/rc")"; exit 0; fi
      sleep 1
    done
    echo "WAITING"; tail -n 3 "$dir/log"
    ;;
  *) echo "usage: $0 start NAME CMD... | wait NAME SECONDS" >&2; exit 2 ;;
esac
