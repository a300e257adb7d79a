#!/usr/bin/env bash
# hotspots round 1b (issue 31 parts 5-6): gpu-lab's own --hotspots end to end, then what ncu's
# Python report interface gives of PmSampling_WarpStates (per-sample series or not). No .ncu-rep back.
set -u
O=/tmp/hs; mkdir -p $O /tmp/hsbin /tmp/hsuite/hsprobe /tmp/hsrep
REAL=$(command -v ncu)
cp kernels/transpose/transpose.cu /tmp/hsuite/hsprobe/
cat > /tmp/hsuite/hsprobe/suite.toml <<'T'
[suite]
name = "hsprobe"
description = "hot-spot capture probe"
source = "transpose.cu"
cache = "cold"
metric_set = "transpose"
bytes = "2 * NX * NY * 4"
check = { op = "transpose", input = "in", output = "out", rows = "NY", cols = "NX" }
[axes]
shape = [ { NX = 2048, NY = 2048 } ]
[[buffers]]
name = "in"
type = "f32"
len = "NX * NY"
init = "random"
[[buffers]]
name = "out"
type = "f32"
len = "NX * NY"
init = "poison"
[[variants]]
name = "naive_column"
kernel = "naive_column"
params = { BX = 32, BY = 8 }
block = ["BX", "BY"]
grid = ["ceil_div(NY, BX)", "ceil_div(NX, BY)"]
args = ["in", "out", "NX", "NY"]
[[variants]]
name = "smem_32"
kernel = "smem_tile"
block = ["32", "32"]
grid = ["ceil_div(NX, 32)", "ceil_div(NY, 32)"]
args = ["in", "out", "NX", "NY"]
defines = { BDIM = "32", PAD = "0" }
[[variants]]
name = "smem_pad_32"
kernel = "smem_tile"
block = ["32", "32"]
grid = ["ceil_div(NX, 32)", "ceil_div(NY, 32)"]
args = ["in", "out", "NX", "NY"]
defines = { BDIM = "32", PAD = "1" }
T
T0() { s=$(date +%s%N); "$@"; r=$?; echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$r: $*" >> $O/timings.txt; }
keep() { mkdir -p $O/$2; for f in $1/*/report.md $1/*/results.jsonl $1/*/*hotspots*.csv $1/*/*hotspots*.log $1/*/run.json; do [ -f "$f" ] && cp "$f" $O/$2/; done; }
# 1. end to end on the probe suite (one shape): with and without --hotspots, for the cost.
T0 timeout 40 $B profile --suite hsprobe --suite-dir /tmp/hsuite --profiler ncu --duration-runs 0 --max-seconds 0.2 --hotspots --out /tmp/r1b -q > $O/e2e.log 2>&1
keep /tmp/r1b e2e
T0 timeout 25 $B profile --suite hsprobe --suite-dir /tmp/hsuite --profiler ncu --duration-runs 0 --max-seconds 0.2 --out /tmp/r1b-plain -q > $O/plain.log 2>&1
# 2. PmSampling_WarpStates over the same child, and the Python report interface on it.
cat > /tmp/hsbin/ncu <<W
#!/usr/bin/env bash
REAL=$REAL
W
cat >> /tmp/hsbin/ncu <<'W'
"$REAL" "$@"; rc=$?
args=("$@"); n=${#args[@]}; i=0; t=-1
while [ $i -lt $n ]; do [ "${args[$i]}" = "--export" ] && t=$((i+2)); i=$((i+1)); done
if [ $t -ge 0 ] && [ ! -e /tmp/hsrep/done ]; then
  touch /tmp/hsrep/done
  [ "${args[$t]}" = "--profile-from-start" ] && t=$((t+2))
  s=$(date +%s%N)
  timeout 30 "$REAL" --clock-control none --target-processes all --section PmSampling_WarpStates -f --export /tmp/hsrep/pmw "${args[@]:$t}" > /tmp/hs/pmw.log 2>&1; r=$?
  echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$r PmSampling_WarpStates session" >> /tmp/hs/timings.txt
fi
exit $rc
W
chmod +x /tmp/hsbin/ncu
NCU=/tmp/hsbin/ncu timeout 30 $B profile --suite hsprobe --suite-dir /tmp/hsuite --variant smem_32 --profiler ncu --duration-runs 0 --max-seconds 0.1 --out /tmp/r1b-pm -q > $O/pm-run.log 2>&1
timeout 10 $REAL --import /tmp/hsrep/pmw.ncu-rep --page details --print-details all > $O/pmw-details.txt 2>&1
PY=$(timeout 10 find / -name ncu_report.py -not -path '*/proc/*' 2>/dev/null | head -1); echo "ncu_report: $PY" > $O/pmw-python.txt
[ -n "$PY" ] && timeout 20 python3 - "$(dirname $PY)" /tmp/hsrep/pmw.ncu-rep >> $O/pmw-python.txt 2>&1 <<'P'
import sys; sys.path.insert(0, sys.argv[1]); import ncu_report
ctx = ncu_report.load_report(sys.argv[2]); rng = ctx.range_by_idx(0)
for i in range(rng.num_actions()):
    a = rng.action_by_idx(i); names = sorted(a.metric_names())
    pm = [n for n in names if 'pmsampling' in n.lower() or 'warp' in n.lower()]
    print(a.name(), len(names), 'metrics,', len(pm), 'pm/warp')
    for n in pm[:60]:
        m = a.metric_by_name(n); k = m.num_instances()
        try: v = [m.as_double(j) for j in range(min(k, 8))] if k else m.as_double()
        except Exception as e: v = repr(e)
        print(' ', n, 'instances', k, v)
P
cp /tmp/hs/timings.txt /tmp/hs/timings-copy.txt 2>/dev/null
find $O -size +3M -exec gzip -9 {} \;
