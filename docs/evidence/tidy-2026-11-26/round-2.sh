# tidy round 2 (H200, 60 s): `gpu-lab ncu --hotspots` on examples/nvprof-probe (built here on the device with -lineinfo when
# nvcc is there, so that ncu finds the source; else the nvcc 13.5 build of round 1), with a kernel filter; then sgemm-tutorial's
# kernels 11 and 12 under synccheck on an H200, and the synccheck probe (examples/sgemm-synccheck) beside its controls.
O=/tmp/hs; W=/tmp/tidy-work; mkdir -p $O $W
t() { local s=$(date +%s%N); "$@"; local rc=$?; echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$rc: $*" >> $O/timings.txt; return $rc; }
P=examples/nvprof-probe
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1)
echo "nvcc: $NVCC" > $O/probe-check.txt
if [ -n "$NVCC" ] && t timeout 40 $NVCC -O3 -lineinfo -arch=sm_90 -o $W/probe $PWD/$P/probe.cu >> $O/probe-check.txt 2>&1; then
  PROBE=$W/probe
else
  PROBE=$P/probe-li; chmod +x $PROBE
fi
timeout 20 $PROBE 256 >> $O/probe-check.txt 2>&1
# 1. every kernel, the report kept for its source page
t timeout 30 $B ncu --hotspots --metrics gld_efficiency,shared_load_transactions_per_request --export $W/probe -- $PROBE 2048 > $O/ncu-hotspots.md 2> $O/ncu-hotspots.err
# 2. sgemm-tutorial 11 and 12 under synccheck on an H200
t timeout 60 $B run --suite sgemm-tutorial --suite-dir kernels --sanitize synccheck --sanitize-only --variant 11_double_buffering,12_double_buffering2 --out $O/runs > $O/sync.out 2> $O/sync.err
# 3. the probe: kernel 11's and 12's barrier patterns, each beside a control
CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)}
S=examples/sgemm-synccheck/synccheck_probe; chmod +x $S
for k in split joined async plain group; do t timeout 20 $CS --tool synccheck --print-limit 2 $S $k > $O/synccheck-probe-$k.txt 2>&1; done
for k in async group; do t timeout 20 $S $k >> $O/synccheck-probe-plainrun.txt 2>&1; done
# 4. a filter naming a template instance (its arguments hold a comma) and a plain function
t timeout 30 $B ncu --hotspots 'transpose_tile<1, 0>,copy_column' -- $PROBE 2048 > $O/ncu-filter.md 2> $O/ncu-filter.err
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)}
t timeout 15 $NCU --import $W/probe.ncu-rep --page source --csv --print-source cuda,sass 2>&1 | gzip -9 -n > $O/probe-source.csv.gz
ls -la $O | head -40
