#!/usr/bin/env bash
# Rewrites examples/html/shared-memory-h100.html: `gpu-lab report --format html` of the committed
# cold H100 shared-memory run, whose results.jsonl is only in reports/cold-all-h100/runs.tar.gz
# (unpacked into a temporary directory, removed on exit). Run it after changing the HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
run=runs/20261123T074227Z-shared-memory-h100-80gb-hbm3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf reports/cold-all-h100/runs.tar.gz -C "$tmp" "$run"
cargo build --release --quiet
mkdir -p examples/html
target/release/gpu-lab report "$tmp/$run" --format html > "$tmp/page.html"
mv "$tmp/page.html" examples/html/shared-memory-h100.html
echo "wrote examples/html/shared-memory-h100.html"
