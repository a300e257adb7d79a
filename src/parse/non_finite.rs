//! NaN or infinite counters of a launch that ran: an ncu that cannot read this GPU's counters (an environment failure), refused before any metric is computed from them (pure).

use super::{KernelRow, NcuOutput};

/// The most counters an error names; the rest are counted.
const NAMED: usize = 4;

/// A launch that ran (its grid is not ncu's `(0, 0, 0)` of a faulted kernel) with counters ncu
/// reported as NaN or infinite. Some ncu versions do that on GPUs newer than they know: the
/// numbers are not measurements, and no metric may be computed or stored from them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "ncu reported {shown} as NaN or infinite for kernel `{kernel}` (launch {id}, grid {grid}), which ran: this ncu cannot read this GPU's counters, an environment failure, not a measurement; nothing was computed from them\n  fix: update Nsight Compute to a version that supports this GPU (or point NCU at a newer ncu; `gpu-lab doctor` shows the one found), then profile again",
    shown = named(counters)
)]
pub struct NonFiniteCounters {
    pub kernel: String,
    pub id: u64,
    pub grid: String,
    /// The counters that were not finite, by name.
    pub counters: Vec<String>,
}

fn named(counters: &[String]) -> String {
    let mut shown = counters
        .iter()
        .take(NAMED)
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if counters.len() > NAMED {
        shown.push_str(&format!(" and {} more", counters.len() - NAMED));
    }
    shown
}

impl KernelRow {
    /// ncu's mark of a launch that faulted: a grid of `(0, 0, 0)` (its counters are NaN too).
    pub fn grid_is_zero(&self) -> bool {
        self.grid_size.replace(' ', "") == "(0,0,0)"
    }
}

impl NcuOutput {
    /// The first launch that ran and still has a NaN or infinite counter, refused.
    pub fn refuse_non_finite(&self) -> Result<(), NonFiniteCounters> {
        refuse_non_finite(&self.kernels)
    }
}

/// `NcuOutput::refuse_non_finite` over any launches.
pub fn refuse_non_finite(kernels: &[KernelRow]) -> Result<(), NonFiniteCounters> {
    for row in kernels.iter().filter(|r| !r.grid_is_zero()) {
        let counters: Vec<String> = row
            .values
            .iter()
            .filter(|(_, v)| !v.is_finite())
            .map(|(name, _)| name.clone())
            .collect();
        if !counters.is_empty() {
            return Err(NonFiniteCounters {
                kernel: row.kernel_name.clone(),
                id: row.id,
                grid: row.grid_size.clone(),
                counters,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn row(grid: &str, values: &[(&str, f64)]) -> KernelRow {
        KernelRow {
            id: 3,
            process_id: "10".into(),
            kernel_name: "copy".into(),
            block_size: "(256, 1, 1)".into(),
            grid_size: grid.into(),
            device: "0".into(),
            cc: "10.0".into(),
            values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            text: BTreeMap::new(),
        }
    }

    #[test]
    fn a_nan_or_infinite_counter_of_a_launch_that_ran_is_an_environment_failure_with_a_fix() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let kernels = [
                row("(64, 1, 1)", &[("dram__bytes_read.sum", 1.0)]),
                row(
                    "(64, 1, 1)",
                    &[
                        ("dram__bytes_read.sum", 1.0),
                        ("gpu__time_duration.sum", bad),
                    ],
                ),
            ];
            let err = refuse_non_finite(&kernels).unwrap_err();
            assert_eq!(err.counters, ["gpu__time_duration.sum"]);
            let text = err.to_string();
            assert!(
                text.contains("environment failure")
                    && text.contains("`gpu__time_duration.sum`")
                    && text.contains("fix: update Nsight Compute"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_faulted_launch_and_finite_counters_are_not_refused() {
        let faulted = row("(0, 0, 0)", &[("dram__bytes_read.sum", f64::NAN)]);
        let fine = row("(8, 8, 1)", &[("dram__bytes_read.sum", 0.0)]);
        assert_eq!(refuse_non_finite(&[faulted, fine]), Ok(()));
    }

    #[test]
    fn many_counters_are_named_four_then_counted() {
        let names: Vec<String> = (0..6).map(|i| format!("c{i}__x.sum")).collect();
        let values: Vec<(&str, f64)> = names.iter().map(|n| (n.as_str(), f64::NAN)).collect();
        let text = refuse_non_finite(&[row("(1, 1, 1)", &values)])
            .unwrap_err()
            .to_string();
        assert!(text.contains("`c3__x.sum` and 2 more"), "{text}");
    }
}
