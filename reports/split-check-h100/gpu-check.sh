#!/bin/bash
# Lead's device check for issue 28: the headline job with the split binary, then old vs new on the same card.
set -u
mkdir -p target/release && xz -dc .carry/pair.tar.xz | tar -C target/release -xf - || exit 1
NEW=$(realpath target/release/new); OLD=$(realpath target/release/old)
L=$OUT/session.log
{
date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
echo "== headline: gpu-lab profile --suite shared-memory (split binary)"
s=$(date +%s); $NEW profile --suite shared-memory --out /tmp/runs/headline --quiet; echo "== exit $? after $(( $(date +%s)-s )) s"
for suite in ${SUITES:-matmul streams dynamic-parallelism reduction}; do
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    s=$(date +%s); $bin run --suite $suite --out /tmp/runs/$b --quiet; echo "== $b run --suite $suite: exit $? after $(( $(date +%s)-s )) s"
  done
  o=$(ls -d /tmp/runs/old/*-$suite-* | tail -1); n=$(ls -d /tmp/runs/new/*-$suite-* | tail -1)
  $NEW baseline save old-$suite --from $o --force >/dev/null
  echo "== check new against old: $suite"; $NEW check --baseline old-$suite --from $n; echo "== check exit $?"
done
echo "== faults (tests/gpu), split binary"; $NEW run --suite faults --suite-dir tests/gpu --timeout 20 --out /tmp/runs/new --quiet; echo "== exit $?"
date -u +%FT%TZ
} > $L 2>&1
tar -C /tmp/runs -czf $OUT/runs.tar.gz .
tail -c 6000 $L
