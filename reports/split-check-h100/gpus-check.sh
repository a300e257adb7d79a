#!/bin/bash
# Lead's device check for issue 28: the rewritten run_sharing (scheduler/dispatch.rs) on two GPUs, old vs new binary.
set -u
mkdir -p target/release && xz -dc .carry/pair.tar.xz | tar -C target/release -xf - || exit 1
NEW=$(realpath target/release/new); OLD=$(realpath target/release/old)
L=$OUT/session.log
{
date -u +%FT%TZ; nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
for b in new old; do
  bin=$OLD; [ $b = new ] && bin=$NEW
  s=$(date +%s); $bin profile --suite reduction,transpose --gpus all --out /tmp/runs/$b --quiet; echo "== $b profile --gpus all: exit $? after $(( $(date +%s)-s )) s"
done
for suite in reduction transpose; do
  o=$(ls -d /tmp/runs/old/*-$suite-* | tail -1); n=$(ls -d /tmp/runs/new/*-$suite-* | tail -1)
  $NEW baseline save old-$suite --from $o --force >/dev/null
  echo "== check new against old: $suite"; $NEW check --baseline old-$suite --from $n; echo "== check exit $?"
  grep -E 'GPUs|wall time|profile' $n/report.md | head -6
done
date -u +%FT%TZ
} > $L 2>&1
tar -C /tmp/runs --exclude='*.ncu-rep' -czf $OUT/runs.tar.gz .
grep -E '^==|^\| (\*\*|Improved|New|Missing)|wall time|GPUs' $L | cut -c1-220
