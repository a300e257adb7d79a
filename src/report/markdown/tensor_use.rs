//! Whether a job's counters agree with the math it declares: tensor-pipe work in a job judged against the FP32 SIMT roof (it declares no math, or `fp32`), or none in a job that declares a tensor math; said in the group's readings (pure).

use std::collections::BTreeMap;

use crate::metrics::{TENSOR_PIPE_METRIC, TENSOR_WORK_THRESHOLD_PCT};
use crate::records::{Math, ProfileRecord};

/// The tensor set's per-kind utilizations, used to name the math a job most likely runs on.
const KINDS: [(&str, &str); 3] = [
    (
        "tensor_hmma_utilization",
        "`tf32-tensor`, `f16-tensor`, `f16-tensor-f16acc`, `bf16-tensor`, `e4m3-tensor` or `e5m2-tensor` (floating-point MMA)",
    ),
    ("tensor_imma_utilization", "`i8-tensor` (integer MMA)"),
    ("tensor_dmma_utilization", "`fp64` (DMMA)"),
];

/// A measured value of `name` (`None` where absent or n/a).
fn value(metrics: &BTreeMap<String, Option<f64>>, name: &str) -> Option<f64> {
    metrics.get(name).copied().flatten()
}

/// The maths to suggest: by the kinds of MMA the tensor set saw, else every tensor math.
fn suggestion(metrics: &BTreeMap<String, Option<f64>>) -> String {
    let seen: Vec<&str> = KINDS
        .iter()
        .filter(|(m, _)| value(metrics, m).is_some_and(|v| v > TENSOR_WORK_THRESHOLD_PCT))
        .map(|(_, maths)| *maths)
        .collect();
    if seen.is_empty() {
        "one of `tf32-tensor`, `f16-tensor`, `f16-tensor-f16acc`, `bf16-tensor`, `e4m3-tensor`, `e5m2-tensor`, `i8-tensor`, `fp64`".into()
    } else {
        seen.join(" or ")
    }
}

/// What the report says where the job's counters and its declared math disagree, or `None`
/// where they agree or the counters were not collected (a run made without them says nothing).
pub(super) fn tensor_use_reading(math: Option<Math>, profile: &ProfileRecord) -> Option<String> {
    let metrics = &profile.metrics;
    let busy = match metrics.get(TENSOR_PIPE_METRIC)? {
        Some(v) => *v,
        // n/a by its rule: the counters saw no tensor-core work. n/a without a reason (no
        // launch was profiled) says nothing.
        None if profile.not_applicable.contains_key(TENSOR_PIPE_METRIC) => 0.0,
        None => return None,
    };
    let on_tensor_cores = busy > TENSOR_WORK_THRESHOLD_PCT;
    match math {
        None if on_tensor_cores => Some(format!(
            "runs on the tensor cores (tensor pipe busy {busy:.1}% of its peak) but declares no math: judged against the FP32 SIMT roof; declare `math = \"…\"` on the suite or the variant: {}",
            suggestion(metrics)
        )),
        Some(Math::Fp32) if on_tensor_cores => Some(format!(
            "declares `math = \"fp32\"` but runs on the tensor cores (tensor pipe busy {busy:.1}% of its peak): judged against the FP32 SIMT roof; declare the math it runs on: {}",
            suggestion(metrics)
        )),
        Some(Math::Fp64) => {
            // DMMA is FP64's own; floating-point or integer MMA of other types is not.
            let other = ["tensor_hmma_utilization", "tensor_imma_utilization"]
                .iter()
                .filter_map(|m| value(metrics, m))
                .fold(0.0, f64::max);
            (other > TENSOR_WORK_THRESHOLD_PCT).then(|| format!(
                "declares `math = \"fp64\"` but runs non-FP64 matrix instructions on the tensor cores ({other:.1}% of the pipe's peak): judged against the FP64 roof; declare the math it runs on"
            ))
        }
        Some(m) if m.is_tensor() && !on_tensor_cores => Some(format!(
            "declares `math = \"{}\"` but its counters show no tensor-core work (tensor pipe busy {busy:.1}% of its peak): judged against the {} roof while it computes on the SIMT lanes; declare the math it runs on (`fp32`, or none)",
            m.name(),
            m.title()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile with these values; a `None` is n/a for "no tensor-core work", as the rule says.
    fn profile(pairs: &[(&str, Option<f64>)]) -> ProfileRecord {
        let mut p = ProfileRecord::failed("j", String::new(), None);
        p.error = None;
        for (k, v) in pairs {
            p.metrics.insert(k.to_string(), *v);
            if v.is_none() {
                p.not_applicable
                    .insert(k.to_string(), "no tensor-core work".into());
            }
        }
        p
    }

    #[test]
    fn an_undeclared_job_on_the_tensor_cores_is_named_with_the_math_to_declare() {
        let busy = profile(&[(TENSOR_PIPE_METRIC, Some(11.5))]);
        let said = tensor_use_reading(None, &busy).unwrap();
        assert!(
            said.contains("declares no math")
                && said.contains("FP32 SIMT roof")
                && said.contains("11.5%")
                && said.contains("`bf16-tensor`"),
            "{said}"
        );
        let said = tensor_use_reading(Some(Math::Fp32), &busy).unwrap();
        assert!(said.contains("declares `math = \"fp32\"`"), "{said}");
        // The tensor set's kinds narrow the suggestion.
        let integer = profile(&[
            (TENSOR_PIPE_METRIC, Some(40.0)),
            ("tensor_hmma_utilization", Some(0.0)),
            ("tensor_imma_utilization", Some(40.0)),
        ]);
        let said = tensor_use_reading(None, &integer).unwrap();
        assert!(
            said.contains("`i8-tensor`") && !said.contains("bf16"),
            "{said}"
        );
    }

    #[test]
    fn simt_jobs_declared_tensor_jobs_and_runs_without_the_counter_say_nothing() {
        // No tensor-core work (n/a by its rule, or 0, or below the threshold).
        for v in [None, Some(0.0), Some(TENSOR_WORK_THRESHOLD_PCT)] {
            let simt = profile(&[(TENSOR_PIPE_METRIC, v)]);
            assert_eq!(tensor_use_reading(None, &simt), None);
            assert_eq!(tensor_use_reading(Some(Math::Fp32), &simt), None);
        }
        let busy = profile(&[(TENSOR_PIPE_METRIC, Some(60.0))]);
        for m in Math::ALL.into_iter().filter(|m| m.is_tensor()) {
            assert_eq!(tensor_use_reading(Some(m), &busy), None, "{m:?}");
        }
        // A run made before the metric existed, or profiled with another set.
        let old = profile(&[("gld_efficiency", Some(100.0))]);
        for m in Math::ALL.map(Some).into_iter().chain([None]) {
            assert_eq!(tensor_use_reading(m, &old), None);
        }
    }

    #[test]
    fn an_n_a_without_its_reason_says_nothing() {
        // No launch profiled: every value is None and no rule said why.
        let mut p = profile(&[]);
        p.metrics.insert(TENSOR_PIPE_METRIC.into(), None);
        assert_eq!(tensor_use_reading(Some(Math::F16Tensor), &p), None);
    }

    #[test]
    fn a_declared_tensor_job_without_tensor_work_and_fp64_with_half_mma_are_named() {
        let simt = profile(&[(TENSOR_PIPE_METRIC, None)]);
        let said = tensor_use_reading(Some(Math::Bf16Tensor), &simt).unwrap();
        assert!(
            said.contains("`math = \"bf16-tensor\"`")
                && said.contains("no tensor-core work")
                && said.contains("BF16 tensor (f32 accumulate) roof"),
            "{said}"
        );
        let dmma = profile(&[
            (TENSOR_PIPE_METRIC, Some(70.0)),
            ("tensor_dmma_utilization", Some(70.0)),
            ("tensor_hmma_utilization", Some(0.0)),
        ]);
        assert_eq!(tensor_use_reading(Some(Math::Fp64), &dmma), None);
        // Without the tensor set, FP64 cannot tell DMMA from the rest: nothing is said.
        let plain = profile(&[(TENSOR_PIPE_METRIC, Some(70.0))]);
        assert_eq!(tensor_use_reading(Some(Math::Fp64), &plain), None);
        let hmma = profile(&[
            (TENSOR_PIPE_METRIC, Some(30.0)),
            ("tensor_hmma_utilization", Some(30.0)),
        ]);
        assert!(
            tensor_use_reading(Some(Math::Fp64), &hmma)
                .unwrap()
                .contains("non-FP64 matrix instructions")
        );
    }
}
