# Round 1 request (run by the lead on 2026-11-25 22:49 UTC, NVIDIA H200, the whole script under
# `timeout 150`): B = the h/curriculum binary of commit 5041bb1, kernels/rowwise of commit b0c826a.
export XDG_DATA_HOME=/tmp/hs/runs-rowwise
unset GPU_LAB_DATA
O=/tmp/hs/runs-rowwise/out
mkdir -p "$O"
date -u +%Y-%m-%dT%H:%M:%SZ > "$O/date.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/nvidia-smi.csv" 2>&1 || true
"$B" --version > "$O/version.txt" 2>&1
timeout 75 "$B" run --suite rowwise --cache cold --max-seconds 0.3 --out /tmp/hs/runs-rowwise/runs-a \
  --variant softmax_thread_row,softmax_block_row,softmax_warp_row,softmax_online,softmax_vec,softmax_cluster,layernorm_vec,layernorm_cluster,rmsnorm_vec,rmsnorm_cluster,softmax_vec_bf16,softmax_cluster_bf16,layernorm_vec_bf16,layernorm_cluster_bf16,rmsnorm_vec_bf16,rmsnorm_cluster_bf16 \
  > "$O/run-a.txt" 2> "$O/run-a.stderr.txt"
echo "run a exit $?" >> "$O/exit-codes.txt"
timeout 50 "$B" run --suite rowwise --cache cold --max-seconds 0.3 --out /tmp/hs/runs-rowwise/runs-b \
  --variant layernorm_block_row,layernorm_warp_row,rmsnorm_block_row,rmsnorm_warp_row,softmax_thread_row_bf16,softmax_block_row_bf16,softmax_warp_row_bf16,softmax_online_bf16,layernorm_block_row_bf16,layernorm_warp_row_bf16,rmsnorm_block_row_bf16,rmsnorm_warp_row_bf16 \
  > "$O/run-b.txt" 2> "$O/run-b.stderr.txt"
echo "run b exit $?" >> "$O/exit-codes.txt"
timeout 25 "$B" profile --suite rowwise --variant softmax_vec,softmax_cluster --max-seconds 0.2 --out /tmp/hs/runs-rowwise/profile > "$O/profile.txt" 2> "$O/profile.stderr.txt"
echo "profile exit $?" >> "$O/exit-codes.txt"
