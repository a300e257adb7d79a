#!/usr/bin/env bash
# The regression gate on a GPU host, in one call of at most 10 minutes: two back-to-back profiles of a suite (SUITE, default transpose),
# a baseline from the first, the second checked against it (expected: exit 0, no Regressed), then a copy of the suite
# with one variant deliberately slowed, run and checked with `check --suite` (expected: exit 3, that variant Regressed).
#
# Usage, from the repository root on the GPU machine (the release binary at target/release/gpu-lab, or GPU_LAB=...):
#   scripts/regression-demo.sh
# Environment: OUT (default /tmp/gpu-lab-out) receives regression-demo.log, check-back-to-back.md, check-slowed.md,
# check-slowed.json and runs.tar.gz (the three run directories without their .ncu-rep files); SLOWED (default
# smem_pad_32) is the variant slowed; THIRD (default copy_row,smem_32,smem_pad_32,transpose_fast) the variants of the
# third run; ALL_VARIANTS, when set (e.g. to $THIRD), restricts the two first runs too, for a slow host.
#
# Why `profile` and not `run`: the check then compares ncu counters as well as timings, and the slowed variant must
# be caught by both (its time and its shared_load_transactions_per_request). The transpose suite takes ~120 s per
# profile on an H200 and ~140 s on an H100; the third run, 4 variants, about 40 s.
#
# How the variant is slowed: smem_pad_32 compiles the shared tile with -DPAD=1 (a 32 x 33 tile, conflict-free); the
# copy gets PAD = "0", a 32 x 32 tile whose column read hits one bank 32 times (smem_32's kernel, ~1.7x slower on an
# H200). Defines are not part of a job's id (docs/suite-format.md, "Jobs and their names"), so the job keeps its id and
# is compared with its baseline; the suite's source hash changes, which the check notes. Where the manifest has no
# PAD = "1" for that variant any more, the copy compiles it with `-G` (no optimisation) instead.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
SUITE=${SUITE:-transpose}
if [ "$SUITE" = shared-memory ]; then
  SLOWED=${SLOWED:-row_write_col_read_pad}
  THIRD=${THIRD:-copy_row,row_write_col_read,row_write_col_read_pad,transpose_fast}
fi
SLOWED=${SLOWED:-smem_pad_32}
THIRD=${THIRD:-copy_row,smem_32,smem_pad_32,transpose_fast}
WORK=$(mktemp -d /tmp/gpu-lab-regression.XXXXXX)
mkdir -p "$OUT" "$WORK/runs" "$WORK/suites"
FIRST=()
[ -n "${ALL_VARIANTS:-}" ] && FIRST=(--variant "$ALL_VARIANTS")

step() { echo "== $(date -u +%T) $*"; }

demo() {
  step "$(hostname): $("$BIN" --version)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  local runs=() n start code
  for n in 1 2; do
    step "profile $n: gpu-lab profile --suite $SUITE ${FIRST[*]}"
    start=$(date +%s)
    "$BIN" profile --suite "$SUITE" "${FIRST[@]}" --out "$WORK/runs" --quiet > "$WORK/run$n.path"
    code=$?
    runs+=("$(tail -n 1 "$WORK/run$n.path")")
    echo "exit $code after $(( $(date +%s) - start )) s: ${runs[-1]}"
  done

  step "baseline save demo --from ${runs[0]}"
  "$BIN" baseline save demo --from "${runs[0]}" --dir "$WORK/baselines" || return 1

  step "check --baseline demo --from ${runs[1]}   (expected: exit 0)"
  "$BIN" check --baseline demo --baseline-dir "$WORK/baselines" --from "${runs[1]}" > "$OUT/check-back-to-back.md"
  echo "exit $? (expected 0)"
  head -n 3 "$OUT/check-back-to-back.md" | tail -n 1
  grep -E '^\| (\*\*Regressed\*\*|Improved) ' "$OUT/check-back-to-back.md" || echo "(no job regressed or improved)"

  step "slowed copy of the suite: $SLOWED"
  # The whole kernels/ tree: suites name sources of other suites (`../transpose/transpose.cu`).
  cp -r kernels/. "$WORK/suites/"
  local manifest="$WORK/suites/$SUITE/suite.toml"
  if ! awk -v v="$SLOWED" '
      /^\[\[variants\]\]/ { mine = 0 }
      $0 ~ "^name = \"" v "\"" { mine = 1 }
      mine && !done && /PAD = "1"/ { sub(/PAD = "1"/, "PAD = \"0\""); done = 1 }
      { print }
      END { exit done ? 0 : 3 }' "kernels/$SUITE/suite.toml" > "$manifest"; then
    echo "no PAD = \"1\" in variant $SLOWED: compiling it with -G instead"
    awk -v v="$SLOWED" '{ print } $0 ~ "^name = \"" v "\"" { print "options = [\"-G\"]" }' "kernels/$SUITE/suite.toml" > "$manifest"
  fi
  diff -u "kernels/$SUITE/suite.toml" "$manifest"

  step "check --baseline demo --suite $SUITE --suite-dir <slowed copy> --variant $THIRD   (expected: exit 3)"
  "$BIN" check --baseline demo --baseline-dir "$WORK/baselines" --suite "$SUITE" --suite-dir "$WORK/suites" \
    --variant "$THIRD" --out "$WORK/runs" --quiet > "$OUT/check-slowed.md"
  echo "exit $? (expected 3)"
  head -n 3 "$OUT/check-slowed.md" | tail -n 1
  grep -E '^\| (\*\*Regressed\*\*|Improved) ' "$OUT/check-slowed.md"
  grep -E '^- ' "$OUT/check-slowed.md"
  local third
  third=$(ls -d "$WORK"/runs/*/ | grep -v -e "${runs[0]}" -e "${runs[1]}" | tail -n 1)
  if [ -n "$third" ]; then
    "$BIN" check --baseline demo --baseline-dir "$WORK/baselines" --from "$third" --format json > "$OUT/check-slowed.json"
    echo "json re-check of $third: exit $?"
  fi
  step "done"
}

demo 2>&1 | tee "$OUT/regression-demo.log"
tar -C "$WORK/runs" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" .
