#!/usr/bin/env bash
# hotspots round 1 (issue 31 parts 5-6): capture real ncu outputs for fixtures.
# gpu-lab's own ncu session runs as usual; an NCU wrapper then runs two extra sessions over the
# same profile child: SourceCounters+WarpStateStats (--import-source yes), and PmSampling; each
# is timed, and its source/raw/details pages exported as CSV. No .ncu-rep comes back.
set -u
O=/tmp/hs; mkdir -p $O /tmp/hsbin /tmp/hsuite/hsprobe /tmp/hsrep
REAL=$(command -v ncu); echo "ncu=$REAL" > $O/env.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/env.txt 2>&1
timeout 10 $REAL --version >> $O/env.txt 2>&1
timeout 10 $REAL --help > $O/ncu-help.txt 2>&1
timeout 10 $REAL --list-sections > $O/ncu-sections.txt 2>&1
timeout 10 $REAL --list-sets > $O/ncu-sets.txt 2>&1
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
cat > /tmp/hsbin/ncu <<W
#!/usr/bin/env bash
REAL=$REAL
W
cat >> /tmp/hsbin/ncu <<'W'
echo "$*" >> /tmp/hs/ncu-args.txt
s=$(date +%s%N); "$REAL" "$@"; rc=$?
echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$rc gpu-lab's session" >> /tmp/hs/timings.txt
args=("$@"); n=${#args[@]}; i=0; t=-1
while [ $i -lt $n ]; do
  if [ "${args[$i]}" = "--export" ]; then t=$((i+2)); fi; i=$((i+1)); done
if [ $t -ge 0 ] && [ ! -e /tmp/hsrep/done ]; then
  touch /tmp/hsrep/done
  if [ "${args[$t]}" = "--profile-from-start" ]; then t=$((t+2)); fi
  target=("${args[@]:$t}")
  s=$(date +%s%N)
  timeout 60 "$REAL" --clock-control none --target-processes all --section SourceCounters --section WarpStateStats --import-source yes -f --export /tmp/hsrep/hot "${target[@]}" > /tmp/hs/hot.log 2>&1; r=$?
  echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$r SourceCounters+WarpStateStats session" >> /tmp/hs/timings.txt
  s=$(date +%s%N)
  timeout 60 "$REAL" --clock-control none --target-processes all --section PmSampling -f --export /tmp/hsrep/pm "${target[@]}" > /tmp/hs/pm.log 2>&1; r=$?
  echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$r PmSampling session" >> /tmp/hs/timings.txt
fi
exit $rc
W
chmod +x /tmp/hsbin/ncu
s=$(date +%s%N)
NCU=/tmp/hsbin/ncu timeout 45 $B profile --suite hsprobe --suite-dir /tmp/hsuite --profiler ncu --duration-runs 0 --max-seconds 0.2 --out /tmp/hsrun -q > $O/profile.log 2>&1; r=$?
echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$r whole gpu-lab profile" >> $O/timings.txt
X() { local out=$1; shift; timeout 15 $REAL --import "$@" > $O/$out 2>&1; echo "rc=$? $out" >> $O/exports.txt; }
H=/tmp/hsrep/hot.ncu-rep
X src-sass.csv $H --page source --csv
X src-cuda.csv $H --page source --csv --print-source cuda
X src-cuda-sass.csv $H --page source --csv --print-source cuda,sass
X hot-raw.csv $H --page raw --csv
X hot-details.csv $H --page details --csv
X hot-details.txt $H --page details --print-details all
P=/tmp/hsrep/pm.ncu-rep
X pm-raw.csv $P --page raw --csv
X pm-details.txt $P --page details --print-details all
X pm-details.csv $P --page details --csv
ls -la /tmp/hsrep >> $O/exports.txt
R=$(ls /tmp/hsrun/*/*.ncu-rep 2>/dev/null | head -1); echo "gpu-lab report: $R" >> $O/exports.txt
cp /tmp/hsrun/*/report.md $O/ 2>/dev/null
find $O -size +3M -exec gzip -9 {} \;
