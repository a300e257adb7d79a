#!/usr/bin/env bash
# Times `gpu-lab import` on a raw-page CSV of 100,000 kernel rows, made by repeating the 23 real
# rows of an H200 capture (tests/fixtures/h200, 333 columns each) with fresh IDs.
# Usage: scripts/bench-import.sh [ROWS]   (binary: target/release/gpu-lab; output under ${OUT:-/tmp})
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-100000}
src=tests/fixtures/h200/transpose-raw-8192x8192.csv
csv=${OUT:-/tmp}/bench-import-${rows}.csv
bin=target/release/gpu-lab
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 1; }
awk -v rows="$rows" '
  /^"ID"/ { header = $0; getline units; next }
  /^"[0-9]/ { body[n++] = $0 }
  END {
    print header; print units
    for (i = 0; i < rows; i++) { line = body[i % n]; sub(/^"[0-9]+"/, "\"" i "\"", line); print line }
  }' "$src" > "$csv"
echo "$(wc -l < "$csv") lines, $(du -h "$csv" | cut -f1) in $csv"
for format in table json; do
  start=$(date +%s.%N)
  "$bin" import "$csv" --format "$format" > /dev/null
  end=$(date +%s.%N)
  echo "gpu-lab import --format $format (every computable metric): $(echo "$end - $start" | bc) s"
done
start=$(date +%s.%N)
"$bin" import "$csv" --metrics gld_efficiency,shared_load_transactions_per_request > /dev/null
end=$(date +%s.%N)
echo "gpu-lab import --metrics gld_efficiency,shared_load_transactions_per_request: $(echo "$end - $start" | bc) s"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%Y-%m-%d)"
