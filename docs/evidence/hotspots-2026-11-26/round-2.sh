#!/usr/bin/env bash
# hotspots round 2 (issue 31 part 5): `profile --hotspots` end to end on the built-in transpose suite
# (3 variants x 4 shapes, default settings: CUPTI counters, ncu duration session, hot-spot session),
# then the shared-memory suite's three row-write/column-read variants. Run dirs come back without .ncu-rep.
set -u
O=/tmp/hs; mkdir -p $O
T0() { s=$(date +%s%N); "$@"; r=$?; echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$r: $*" >> $O/timings.txt; }
keep() { for d in "$1"/*/; do n=$(basename "$d"); mkdir -p $O/$2; cp -r "$d" $O/$2/; done; find $O/$2 -name '*.ncu-rep' -delete; }
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.limit --format=csv > $O/gpu-before.txt 2>&1
T0 timeout 95 $B profile --suite transpose --suite-dir kernels --variant naive_column,smem_32,smem_pad_32 --hotspots --out /tmp/r2 -q > $O/transpose.log 2>&1
keep /tmp/r2 transpose
T0 timeout 20 $B profile --suite shared-memory --suite-dir kernels --variant row_write_col_read,row_write_col_read_pad,row_write_col_read_swizzle --hotspots row_write_col_read,row_write_col_read_swizzle --max-seconds 0.3 --duration-runs 0 --out /tmp/r2s -q > $O/shared-memory.log 2>&1
keep /tmp/r2s shared-memory
find $O -size +3M -exec gzip -9 {} \;
