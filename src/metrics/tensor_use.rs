//! The tensor-pipe metric every profile of a suite with flops collects, and the threshold above which a job counts as running on the tensor cores (pure; the report's reading is `report::markdown::tensor_use`).

use super::catalog::Catalog;
use super::definition::MetricDef;

/// The metric the check reads: tensor-pipe matrix work as % of the pipe's peak while the SM is
/// active (`metrics/tensor.toml`); the `compute` and `tensor` sets collect it, and so does any
/// profile of a suite whose jobs declare flops.
pub const TENSOR_PIPE_METRIC: &str = "tensor_pipe_utilization";

/// Above this (% of the tensor pipe's peak) a job counts as running on the tensor cores. A SIMT
/// kernel reads exactly 0 (HFMA2.MMA is not counted); 0.1% is about 1 TFLOP/s of f16 matrix work
/// on an H100, far below any tensor-core kernel worth judging, and above a stray instruction.
pub const TENSOR_WORK_THRESHOLD_PCT: f64 = 0.1;

/// `defs` with the tensor-pipe metric added where it is not there yet: for a suite whose jobs
/// declare flops, whatever set it profiles with, so that the report can tell tensor-core work
/// judged against the FP32 roof (two SM pipe counters: no replay pass of their own on Hopper).
pub fn with_tensor_check(catalog: &Catalog, mut defs: Vec<MetricDef>) -> Vec<MetricDef> {
    if let Some(def) = catalog.metrics.get(TENSOR_PIPE_METRIC)
        && !defs.iter().any(|d| d.name == TENSOR_PIPE_METRIC)
    {
        defs.push(def.clone());
    }
    defs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_is_added_once() {
        let catalog = Catalog::builtin().unwrap();
        let memory = catalog.resolve(&["memory".into()]).unwrap();
        let added = with_tensor_check(&catalog, memory.clone());
        assert_eq!(added.len(), memory.len() + 1);
        assert_eq!(added.last().unwrap().name, TENSOR_PIPE_METRIC);
        let compute = catalog.resolve(&["compute".into()]).unwrap();
        assert_eq!(with_tensor_check(&catalog, compute.clone()), compute);
    }
}
