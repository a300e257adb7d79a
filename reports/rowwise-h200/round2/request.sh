# Round 2 request (run by the lead on 2026-11-25 23:31 UTC, NVIDIA H200 GPU-89c6188f, whole script under timeout 120): kernels/rowwise of commit ebe30c7, the binary unchanged since round 1.
# issue 30 part 2 (h/curriculum), round 2: the `rowwise` suite's long rows (1024 x 131072, now the
# first group, so each run below reaches it first). Since round 1: the 8-block cluster rung
# exchanges one pair of block statistics behind one cluster barrier (the exit barrier split around
# the writes), and a 16-block cluster rung (256-thread blocks, 4 an SM) is new.
# Run from the h/curriculum worktree root with B=<the unpacked curriculum.xz binary> (the Rust is
# unchanged since round 1; kernels/rowwise is read from the worktree). Output: /tmp/hs/runs-rowwise.
# Results are saved after every job: a run cut off by its timeout keeps the jobs that finished.
export XDG_DATA_HOME=/tmp/hs/runs-rowwise
unset GPU_LAB_DATA
O=/tmp/hs/runs-rowwise/out
mkdir -p "$O"
date -u +%Y-%m-%dT%H:%M:%SZ > "$O/date.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/nvidia-smi.csv" 2>&1 || true
# 1. Both cluster rungs of every op, f32 and bf16 (12 jobs at the long rows, then the other shapes).
timeout 70 "$B" run --suite rowwise --max-seconds 0.25 --out /tmp/hs/runs-rowwise/runs-a \
  --variant softmax_cluster,softmax_cluster16,layernorm_cluster,layernorm_cluster16,rmsnorm_cluster,rmsnorm_cluster16,softmax_cluster_bf16,softmax_cluster16_bf16,layernorm_cluster_bf16,layernorm_cluster16_bf16,rmsnorm_cluster_bf16,rmsnorm_cluster16_bf16 \
  > "$O/run-a.txt" 2> "$O/run-a.stderr.txt"
echo "run a exit $?" >> "$O/exit-codes.txt"
# 2. The rungs below them at the long rows: vec (streamed twice), then the f32 softmax ladder.
timeout 70 "$B" run --suite rowwise --max-seconds 0.2 --out /tmp/hs/runs-rowwise/runs-b \
  --variant softmax_vec,layernorm_vec,rmsnorm_vec,softmax_vec_bf16,layernorm_vec_bf16,rmsnorm_vec_bf16,softmax_block_row,softmax_warp_row,softmax_online,layernorm_block_row,rmsnorm_block_row \
  > "$O/run-b.txt" 2> "$O/run-b.stderr.txt"
echo "run b exit $?" >> "$O/exit-codes.txt"
