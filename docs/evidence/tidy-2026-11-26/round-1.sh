# tidy round 1 (H100, 80 s): `gpu-lab ncu --hotspots` end to end on examples/nvprof-probe (the copy and
# transpose-tile kernels), its report's source and raw pages kept as fixtures; then sgemm-tutorial's
# kernels 11 and 12 under synccheck (raw compute-sanitizer logs are in the run directory).
# probe-li / probe-noli: probe.cu built here with nvcc 13.5 (-O3 [-lineinfo] sm_90), untracked; rebuilt on the device if they do not run.
O=/tmp/hs; W=/tmp/tidy-work; mkdir -p $O $W
t() { local s=$(date +%s%N); "$@"; local rc=$?; echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$rc: $*" >> $O/timings.txt; return $rc; }
P=examples/nvprof-probe
chmod +x $P/probe-li $P/probe-noli 2>/dev/null
if ! timeout 20 $P/probe-li 256 > $O/probe-check.txt 2>&1; then
  NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1)
  echo "prebuilt probe failed; building with $NVCC" >> $O/probe-check.txt
  $NVCC -O3 -lineinfo -arch=sm_90 -o $P/probe-li $P/probe.cu >> $O/probe-check.txt 2>&1
  $NVCC -O3 -arch=sm_90 -o $P/probe-noli $P/probe.cu >> $O/probe-check.txt 2>&1
fi
# 1. ncu --hotspots on the probe (every kernel), the report kept for its pages.
t timeout 45 $B ncu --hotspots --metrics duration,gld_efficiency,shared_load_transactions_per_request --export $W/probe -- $P/probe-li 2048 > $O/ncu-hotspots.md 2> $O/ncu-hotspots.err
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)}
echo "ncu: $NCU" >> $O/timings.txt
t timeout 20 $NCU --import $W/probe.ncu-rep --page source --csv --print-source cuda,sass > $O/probe-source.csv 2> $O/probe-source.err
t timeout 20 $NCU --import $W/probe.ncu-rep --page raw --csv --print-units base > $O/probe-raw.csv 2> $O/probe-raw.err
gzip -9 -n $O/probe-source.csv $O/probe-raw.csv
# 2. sgemm-tutorial 11 and 12 under synccheck (H100 2026-11-26 reported findings in both).
t timeout 100 $B run --suite sgemm-tutorial --suite-dir kernels --sanitize synccheck --sanitize-only --variant 11_double_buffering,12_double_buffering2 --out $O/runs > $O/sync.out 2> $O/sync.err
# 3. The two patterns in a probe of our own (examples/sgemm-synccheck, built here with nvcc 13.5), each beside a control.
CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)}
S=examples/sgemm-synccheck/synccheck_probe; chmod +x $S
if ! timeout 20 $S joined > $O/synccheck-probe-check.txt 2>&1; then
  NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1)
  $NVCC -O3 -lineinfo -arch=sm_90 -o $S $S.cu >> $O/synccheck-probe-check.txt 2>&1
fi
for k in split joined async plain group; do t timeout 20 $CS --tool synccheck --print-limit 6 $S $k > $O/synccheck-probe-$k.txt 2>&1; done
# 4. A kernel filter on a build without -lineinfo; the same metrics without --hotspots (do the sections change them?).
t timeout 30 $B ncu --hotspots transpose_tile,copy_row -- $P/probe-noli 2048 > $O/ncu-noli.md 2> $O/ncu-noli.err
t timeout 30 $B ncu --metrics duration,gld_efficiency,shared_load_transactions_per_request -- $P/probe-li 2048 > $O/ncu-plain.txt 2> $O/ncu-plain.err
ls -la $O $O/runs/* 2>/dev/null | head -40
