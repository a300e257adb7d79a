#!/usr/bin/env bash
# Re-renders every committed run (examples/reports and the test fixtures) with two
# gpu-lab binaries, in every report format, and lists each run whose output, error text or exit
# code differs. A refactor that changes no behaviour leaves none. Both binaries must read
# results.jsonl.gz (the committed runs store their results gzipped; gpu-lab does since issue 34).
# Usage: scripts/rerender-check.sh OLD_BINARY NEW_BINARY   (from the repository root)
set -euo pipefail
old=$(realpath "$1") new=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=()
while IFS= read -r -d '' f; do runs+=("$(dirname "$f")"); done < <(git ls-files -z 'examples/reports/**/run.json' 'tests/fixtures/runs/**/run.json')
differ=0 checked=0
for run in "${runs[@]}"; do
  for format in md json csv svg frame; do
    checked=$((checked + 1))
    set +e
    "$old" report "$run" --format "$format" > "$work/old.out" 2> "$work/old.err"; old_rc=$?
    "$new" report "$run" --format "$format" > "$work/new.out" 2> "$work/new.err"; new_rc=$?
    set -e
    if [ "$old_rc" != "$new_rc" ] || ! cmp -s "$work/old.out" "$work/new.out" || ! cmp -s "$work/old.err" "$work/new.err"; then
      echo "differs: $run --format $format (exit $old_rc -> $new_rc)"
      differ=$((differ + 1))
    fi
  done
done
echo "${#runs[@]} runs, $checked renderings, $differ differ"
[ "$differ" = 0 ]
