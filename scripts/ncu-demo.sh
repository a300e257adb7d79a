#!/usr/bin/env bash
# On a GPU host: compiles examples/nvprof-probe/probe.cu with nvcc and shows `gpu-lab ncu` and
# `gpu-lab import` on it (every format, --kernel, --launch-count, the .ncu-rep and ncu's own CSVs),
# plus the error cases. Everything goes to $OUT (default ./ncu-demo-out): demo.log with every
# command, its output and exit code; probe-raw.csv and probe-details.csv (ncu's exports, to commit
# as fixtures); probe.ncu-rep. Run from the repo root after `cargo build --release`.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/ncu-demo-out}
mkdir -p "$OUT"
bin=$PWD/target/release/gpu-lab
log=$OUT/demo.log
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
export PATH="$PATH:/usr/local/cuda/bin"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

step() {  # step TITLE CMD...: runs CMD, logs it with its stdout, stderr and exit code
    local title=$1; shift
    { echo; echo "### $title"; echo "\$ $*"; } >> "$log"
    "$@" > "$work/stdout" 2> "$work/stderr"
    local rc=$?
    { echo "--- stdout"; cat "$work/stdout"; echo "--- stderr"; cat "$work/stderr"; echo "--- exit code: $rc"; } >> "$log"
    echo "$title: exit $rc"
}

{ echo "gpu-lab ncu demo, $(date -u +%Y-%m-%dT%H:%M:%SZ)"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader; "$nvcc" --version | tail -1; "$ncu" --version | tail -1; } > "$log" 2>&1
[ -x "$bin" ] || { echo "build first: cargo build --release" | tee -a "$log"; exit 1; }
"$nvcc" -O3 -arch=native -o "$work/probe" examples/nvprof-probe/probe.cu >> "$log" 2>&1 || { echo "nvcc failed, see $log"; exit 1; }
cd "$work"
m=gld_efficiency,shared_load_transactions_per_request
step "nvprof table" "$bin" ncu --metrics $m --export "$work/probe" -- ./probe
step "markdown" "$bin" ncu --metrics $m --format md -- ./probe
step "csv" "$bin" ncu --metrics $m --format csv -- ./probe
step "json" "$bin" ncu --metrics $m --format json -- ./probe
step "the seeds' metrics" "$bin" ncu --metrics gld_efficiency,gst_efficiency,gld_transactions_per_request,gst_transactions_per_request,shared_load_transactions_per_request,shared_store_transactions_per_request,shared_bank_conflicts,achieved_occupancy -- ./probe
step "--kernel 'copy_.*'" "$bin" ncu --metrics $m --kernel 'copy_.*' -- ./probe
step "--launch-count 2" "$bin" ncu --metrics $m --launch-count 2 -- ./probe
step "no metrics: durations" "$bin" ncu -- ./probe 1024
LC_ALL=C "$ncu" -i "$work/probe.ncu-rep" --csv --page raw --print-units base > "$OUT/probe-raw.csv" 2>> "$log"
LC_ALL=C "$ncu" -i "$work/probe.ncu-rep" --csv --page details > "$OUT/probe-details.csv" 2>> "$log"
cp "$work/probe.ncu-rep" "$OUT/"
step "import the .ncu-rep" "$bin" import "$work/probe.ncu-rep" --metrics $m
step "import ncu's raw CSV, every computable metric" "$bin" import "$OUT/probe-raw.csv"
step "import ncu's details CSV" "$bin" import "$OUT/probe-details.csv" --metrics $m
step "error: missing program" "$bin" ncu --metrics $m -- ./no-such-probe
step "error: the program exits 3" "$bin" ncu --metrics $m -- ./probe 256 3
step "error: a misspelt raw counter" "$bin" ncu --metrics l1tex__t_sector_pipe_lsu_mem_global_op_ld.sum -- ./probe
step "error: an unknown metric name" "$bin" ncu --metrics gld_eficiency -- ./probe
echo "log: $log"
