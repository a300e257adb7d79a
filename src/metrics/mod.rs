//! Metric definitions (`metrics/*.toml`) and their formulas: raw ncu counters -> named metrics such as `gld_efficiency` (pure).
//!
//! `definition` says what a metric is, `catalog` holds every known metric and set and resolves
//! names, `formula` evaluates a metric on the counters of launches, `tensor_use` names the tensor-pipe
//! metric that tells tensor-core work from SIMT work.

mod catalog;
mod definition;
mod formula;
mod tensor_use;

pub use catalog::{BUILTIN_FILES, Catalog, MetricsError, choose_for_file, nearest};
pub use definition::{
    Aggregate, Alternative, Better, DURATION, DURATION_METRIC, MetricDef, NotApplicableRule,
    SetDef, counters_needed, format_ideal, format_value, is_notable, is_raw_counter, is_raw_metric,
    raw_metric,
};
pub use formula::{Evaluator, FormulaError, LaunchValue, aggregate, evaluate, evaluate_launches};
pub use tensor_use::{TENSOR_PIPE_METRIC, TENSOR_WORK_THRESHOLD_PCT, with_tensor_check};

#[cfg(test)]
mod tests;
