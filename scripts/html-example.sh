#!/usr/bin/env bash
# Rewrites examples/html/shared-memory-h100.html: `gpu-lab report --format html` of the committed
# cold H100 shared-memory run in examples/reports/shared-memory/h100. Run it after changing the
# HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
mkdir -p examples/html
tmp=$(mktemp examples/html/.page.XXXXXX)
trap 'rm -f "$tmp"' EXIT
target/release/gpu-lab report examples/reports/shared-memory/h100 --format html > "$tmp"
mv "$tmp" examples/html/shared-memory-h100.html
echo "wrote examples/html/shared-memory-h100.html"
