#!/bin/bash
# Lead's device check for issue 28: is streams' depth_first spread the binary or the host link? old/new alternated.
set -u
mkdir -p target/release && xz -dc .carry/pair.tar.xz | tar -C target/release -xf - || exit 1
NEW=$(realpath target/release/new); OLD=$(realpath target/release/old)
L=$OUT/session.log
{
date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
for i in 1 2 3; do for b in old new; do
  bin=$OLD; [ $b = new ] && bin=$NEW
  $bin run --suite streams --out /tmp/runs/$b$i --quiet > /dev/null; echo "== $b$i exit $?"
done; done
for r in /tmp/runs/*/*-streams-*; do echo "== $r"; grep -E '^\| `(depth_first|serial)' $r/report.md | cut -d'|' -f2,3; done
date -u +%FT%TZ
} > $L 2>&1
tar -C /tmp/runs -czf $OUT/runs.tar.gz .
cat $L
