#!/bin/bash
# Device session: `hs.sh start TASKFILE` runs each line of TASKFILE (gpu-lab arguments; $B is the binary) in the background, logged; `hs.sh collect` waits and packs.
set -u
W=/tmp/hs; mkdir -p $W/runs
if [ "${1:-}" = start ]; then
  rm -rf $W; mkdir -p $W/runs
  scripts/unpack-binary.sh > /dev/null || exit 1
  export B=$(realpath target/release/gpu-lab)
  cp "$2" $W/tasks
  setsid bash -c '
    cd '"$PWD"'
    { date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv
      while IFS= read -r line; do
        [ -z "$line" ] && continue
        echo "== $line"; s=$(date +%s)
        eval "$line"; echo "== exit $? after $(( $(date +%s)-s )) s"
      done < '$W'/tasks
      date -u +%FT%TZ; echo "== done"; } > '$W'/session.log 2>&1' < /dev/null > /dev/null 2>&1 &
fi
for _ in $(seq ${WAIT:-540}); do grep -q '^== done' $W/session.log 2>/dev/null && break; sleep 1; done
cp $W/session.log $OUT/
tar -C $W --exclude="*.ncu-rep" -czf $OUT/runs.tar.gz runs runs-energy runs-profile 2>/dev/null; tar -C $W --exclude="*.ncu-rep" -czf $OUT/runs.tar.gz $(cd $W; ls -d runs*)
tail -c 9000 $W/session.log
