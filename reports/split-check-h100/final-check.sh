#!/bin/bash
# Lead's device check after issue 33's merges: the headline job, the fault suite (failed jobs' logs kept), report --write, baseline and check.
set -u
scripts/unpack-binary.sh >/dev/null || exit 1
B=$(realpath target/release/gpu-lab); L=$OUT/session.log
{
date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv
s=$(date +%s); $B profile --suite shared-memory --out /tmp/runs --quiet; echo "== profile shared-memory: exit $? after $(( $(date +%s)-s )) s"
r=$(ls -d /tmp/runs/*-shared-memory-*); ls $r
$B report $r --write >/dev/null; echo "== report --write: exit $?"
$B baseline save first --from $r >/dev/null; echo "== baseline save: exit $?"
s=$(date +%s); $B check --baseline first --suite shared-memory --out /tmp/runs2 > /tmp/check.txt; echo "== check --suite: exit $? after $(( $(date +%s)-s )) s"; grep -cE '^\| Same' /tmp/check.txt; grep -E '^\| \*\*' /tmp/check.txt
$B run --suite faults --suite-dir tests/gpu --timeout 20 --out /tmp/runs --quiet; echo "== faults: exit $?"
f=$(ls -d /tmp/runs/*-faults-*); ls $f $f/logs; grep -E '^\| `' $f/report.md | head -6 | cut -c1-120
date -u +%FT%TZ
} > $L 2>&1
tar -C /tmp --exclude='*.ncu-rep' -czf $OUT/runs.tar.gz runs runs2
cat $L | cut -c1-200 | tail -60
