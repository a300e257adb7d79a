#!/usr/bin/env bash
# Issue 13 items 9 and 1 on a GPU host, in one call from the repository root after `cargo build --release`:
# doctor (nvcc, libcudadevrt), the dynamic-parallelism suite (run, then profile), the scan suite's new large
# size and rungs, and the standalone dynamic-parallelism program built with nvcc, run and put under `gpu-lab ncu`.
# STEPS picks the parts (default: all, in this order). Writes $OUT/dynpar.log (every command, its output and exit
# code, then each job's status, median and timing method) and $OUT/runs.tar.gz (the run directories, no .ncu-rep).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
STEPS=${STEPS:-"doctor dp-run dp-profile scan-run scan-profile example"}
WORK=$(mktemp -d /tmp/gpu-lab-dynpar.XXXXXX)
export PATH="$PATH:/usr/local/cuda/bin"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
mkdir -p "$OUT" "$WORK/runs"
log=$OUT/dynpar.log

step() {  # step TITLE CMD...: runs CMD with its output in the log, and its exit code and time
    local title=$1; shift
    local start=$(date +%s)
    { echo; echo "== $title"; echo "\$ $*"; } >> "$log"
    "$@" >> "$log" 2>&1
    local rc=$?
    echo "== exit $rc after $(( $(date +%s) - start )) s" >> "$log"
    echo "$title: exit $rc"
}

{ echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  "$nvcc" --version | tail -2; } > "$log" 2>&1
[ -x "$BIN" ] || { echo "build first: cargo build --release" | tee -a "$log"; exit 1; }
for s in $STEPS; do
  case $s in
    doctor) step "doctor" "$BIN" doctor ;;
    dp-run) step "run dynamic-parallelism" "$BIN" run --suite dynamic-parallelism --out "$WORK/runs" --quiet ;;
    dp-profile) step "profile dynamic-parallelism" "$BIN" profile --suite dynamic-parallelism --out "$WORK/runs" --quiet ;;
    scan-run) step "run scan (the rungs for 80%, and reduce_then_scan, at every size)" "$BIN" run --suite scan --variant lookback_smem,lookback_onepass,reduce_then_scan --out "$WORK/runs" --quiet ;;
    scan-profile) step "profile scan (every variant, every size)" "$BIN" profile --suite scan --out "$WORK/runs" --quiet ;;
    example)
      step "nvcc the standalone program" "$nvcc" -O3 -arch=native -rdc=true -o "$WORK/dp" examples/cuda/dynamic_parallelism.cu -lcudadevrt
      step "run it, 2^24" "$WORK/dp" 24
      step "run it, 2^20, with seed 002 §32's printing example" "$WORK/dp" 20 --print
      step "gpu-lab ncu on it (durations)" "$BIN" ncu -- "$WORK/dp" 20
      step "gpu-lab ncu on it (memory metrics)" "$BIN" ncu --set memory -- "$WORK/dp" 20
      ;;
    *) echo "unknown step $s (steps: doctor dp-run dp-profile scan-run scan-profile example)" | tee -a "$log" ;;
  esac
done
python3 scripts/job-summary.py "$WORK"/runs/*/ >> "$log"
tar -C "$WORK/runs" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" .
grep -E "^== (run|profile|doctor|nvcc|gpu-lab)|^== exit" "$log"
