#!/usr/bin/env bash
# Issue 15's open question: do two ncu processes on two GPUs of one host profile in parallel?
# Times one ncu on GPU 0, then ncu on GPU 0 and GPU 1 at once with a lock directory (TMPDIR) each,
# then at once with one shared TMPDIR. Run on a two-GPU host from the repository root; prints the walls.
set -uo pipefail
OUT=${OUT:-/tmp/ncu-lock-probe}; mkdir -p "$OUT"; W=$(mktemp -d)
nvcc -O2 -o "$W/probe" scripts/ncu-lock-probe/probe.cu || exit 1
LAUNCHES=${LAUNCHES:-60}
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct,gpu__time_duration.sum
prof() { # GPU TMPDIR LOG
  mkdir -p "$2"; CUDA_VISIBLE_DEVICES=$1 TMPDIR=$2 ncu --clock-control none --metrics $METRICS "$W/probe" "$LAUNCHES" > "$3" 2>&1
}
now() { date +%s%N; }
secs() { echo "$(( ($(now) - $1) / 1000000 ))" | sed -E 's/([0-9]{3})$/.\1/'; } # since START ns, in s
t() { local s=$(now); "$@"; secs "$s"; }
{
  echo "== $(date -u +%FT%TZ) $(hostname)"; nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader; ncu --version | tail -1
  echo "one ncu, GPU 0: $(t prof 0 $W/a $OUT/one.log) s"
  echo "one ncu, GPU 1: $(t prof 1 $W/b $OUT/one-b.log) s"
  s=$(now); prof 0 $W/a $OUT/two-a.log & prof 1 $W/b $OUT/two-b.log & wait
  echo "two ncu at once, GPU 0 and 1, a TMPDIR each: $(secs "$s") s"
  s=$(now); prof 0 $W/c $OUT/shared-a.log & prof 1 $W/c $OUT/shared-b.log & wait
  echo "two ncu at once, GPU 0 and 1, one TMPDIR: $(secs "$s") s"
  grep -h "launches:" $OUT/*.log | sort | uniq -c
  grep -h "==PROF== Disconnected\|==ERROR==\|==WARNING==" $OUT/*.log | sort | uniq -c | head
} 2>&1 | tee "$OUT/probe.txt"
