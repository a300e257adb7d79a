//! The device's metric list (`ncu --query-metrics`) and what it says about a name: collectable here, misspelt, or wrongly suffixed (pure).
//!
//! `--query-metrics` lists base names (`sm__warps_active`) with their type; a collectable name is
//! `base.rollup[.submetric]` for counters and throughputs (`sm__warps_active.avg.pct_of_peak_sustained_active`)
//! and `base.{pct,ratio,max_rate}` for ratios (Nsight Compute's "Metrics Structure").

use std::collections::HashMap;

use crate::metrics::{self, MetricDef};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Ratio,
    Throughput,
    /// A type this version of gpu-lab does not know: any suffix is accepted.
    Other,
}

/// One device's block of `ncu --query-metrics` output.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceMetrics {
    /// `NVIDIA H200`
    pub device: String,
    /// `gh100` (lower case, as `ncu --chip` takes it)
    pub chip: String,
    pub metrics: HashMap<String, MetricKind>,
}

const ROLLUPS: [&str; 4] = ["sum", "avg", "min", "max"];
const SUBMETRICS: [&str; 18] = [
    "per_second",
    "per_cycle_active",
    "per_cycle_elapsed",
    "per_cycle_in_frame",
    "per_cycle_in_region",
    "pct_of_peak_sustained_active",
    "pct_of_peak_sustained_elapsed",
    "pct_of_peak_sustained_frame",
    "pct_of_peak_sustained_region",
    "peak_sustained",
    "peak_sustained_active",
    "peak_sustained_active.per_second",
    "peak_sustained_elapsed",
    "peak_sustained_elapsed.per_second",
    "peak_sustained_frame",
    "peak_sustained_frame.per_second",
    "peak_sustained_region",
    "peak_sustained_region.per_second",
];
const RATIO_SUFFIXES: [&str; 3] = ["pct", "ratio", "max_rate"];

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    #[error("no metric list in the `ncu --query-metrics` output (expected a `Device NAME (CHIP)` line and a table){}", .said.as_deref().map(|s| format!("; ncu said: {s}")).unwrap_or_default())]
    NoList { said: Option<String> },
    #[error(
        "{problems}\n  fix: `ncu --query-metrics` lists this GPU's metrics; `gpu-lab list metrics` shows gpu-lab's names"
    )]
    UnknownCounter { problems: String },
}

/// Parses `ncu --query-metrics` (default `base` mode): one block per device, each opened by `Device NAME (CHIP)`.
pub fn parse_query_metrics(text: &str) -> Result<Vec<DeviceMetrics>, QueryError> {
    let mut blocks: Vec<DeviceMetrics> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Device ") {
            let (device, chip) = match rest.trim().rsplit_once(" (") {
                Some((d, c)) => (d.to_string(), c.trim_end_matches(')').to_lowercase()),
                None => (rest.trim().to_string(), String::new()),
            };
            blocks.push(DeviceMetrics {
                device,
                chip,
                metrics: HashMap::new(),
            });
            continue;
        }
        // Wrapped descriptions continue on indented lines; rulers, the column header and ncu's notes are not metrics.
        if line.starts_with([' ', '-', '='])
            || line.starts_with("Metric Name")
            || line.trim().is_empty()
        {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        let Some(block) = blocks.last_mut() else {
            continue;
        };
        let kind = match kind {
            "Counter" => MetricKind::Counter,
            "Ratio" => MetricKind::Ratio,
            "Throughput" => MetricKind::Throughput,
            _ => MetricKind::Other,
        };
        block.metrics.insert(name.to_string(), kind);
    }
    blocks.retain(|b| !b.metrics.is_empty());
    if blocks.is_empty() {
        // What ncu printed instead, when it was short enough to be a message.
        let said = (text.len() < 2000 && !text.trim().is_empty()).then(|| text.trim().to_string());
        return Err(QueryError::NoList { said });
    }
    Ok(blocks)
}

/// What the device's list says about one raw ncu name.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Collectable,
    /// Launch statistics and attributes (`launch__grid_size`, `device__attribute_display_name`):
    /// ncu reports them but `--query-metrics` does not list them.
    Unlisted,
    UnknownBase {
        base: String,
        suggestions: Vec<String>,
    },
    BadSuffix {
        base: String,
        suffix: String,
        expected: String,
    },
}

/// `base` and `suffix` of `base.rollup.submetric`; the base ends at the first `.` after its `__`.
pub fn split_name(name: &str) -> (&str, &str) {
    let after = name.find("__").map(|i| i + 2).unwrap_or(0);
    match name[after..].find('.') {
        Some(dot) => (&name[..after + dot], &name[after + dot + 1..]),
        None => (name, ""),
    }
}

impl DeviceMetrics {
    pub fn check(&self, name: &str) -> Verdict {
        let (base, suffix) = split_name(name);
        let Some(kind) = self.metrics.get(base) else {
            // ncu reports launch statistics, device attributes and its own `profiler__` figures
            // without listing them: unsuffixed names, or units the list never mentions.
            let unit = base.rsplit_once("__").map(|(u, _)| u).unwrap_or(base);
            if suffix.is_empty()
                || !self
                    .metrics
                    .keys()
                    .any(|k| k.rsplit_once("__").is_some_and(|(u, _)| u == unit))
            {
                return Verdict::Unlisted;
            }
            return Verdict::UnknownBase {
                base: base.to_string(),
                suggestions: metrics::nearest(base, self.metrics.keys()),
            };
        };
        let ok = match kind {
            MetricKind::Counter | MetricKind::Throughput => {
                let (rollup, sub) = suffix.split_once('.').unwrap_or((suffix, ""));
                ROLLUPS.contains(&rollup) && (sub.is_empty() || SUBMETRICS.contains(&sub))
            }
            MetricKind::Ratio => RATIO_SUFFIXES.contains(&suffix),
            MetricKind::Other => !suffix.is_empty(),
        };
        if ok {
            return Verdict::Collectable;
        }
        let expected = match kind {
            MetricKind::Ratio => format!(".{}", RATIO_SUFFIXES.join(", .")),
            _ => format!(
                ".{} (then optionally .per_second, .pct_of_peak_sustained_elapsed, …)",
                ROLLUPS.join(", .")
            ),
        };
        Verdict::BadSuffix {
            base: base.to_string(),
            suffix: suffix.to_string(),
            expected,
        }
    }
}

/// Why a name cannot be collected on this device, for warnings and errors; `None` when it can.
pub fn explain(list: &DeviceMetrics, counter: &str) -> Option<String> {
    let chip = if list.chip.is_empty() {
        list.device.clone()
    } else {
        format!("{} ({})", list.device, list.chip)
    };
    match list.check(counter) {
        Verdict::Collectable | Verdict::Unlisted => None,
        Verdict::UnknownBase { base, suggestions } => Some(format!(
            "`{counter}`: ncu on {chip} has no metric `{base}`{}",
            if suggestions.is_empty() {
                String::new()
            } else {
                format!("; closest: {}", suggestions.join(", "))
            }
        )),
        Verdict::BadSuffix {
            base,
            suffix,
            expected,
        } => Some(format!(
            "`{counter}`: `{base}` takes {expected}, not `.{suffix}`"
        )),
    }
}

/// The metrics of a request, split by what this device can collect.
#[derive(Debug, Default)]
pub struct Screened {
    pub collectable: Vec<MetricDef>,
    /// Metric name -> why it cannot be collected here.
    pub unavailable: Vec<(String, String)>,
}

/// A raw ncu name given as a metric is a misspelling when the device does not know it: an error,
/// with the closest names. A named metric whose counters this device lacks is left out with the
/// reason, and the others still run.
pub fn screen(defs: Vec<MetricDef>, list: &DeviceMetrics) -> Result<Screened, QueryError> {
    let mut out = Screened::default();
    for mut def in defs {
        // A not-applicable rule over counters this GPU lacks (TMA before Hopper) is dropped, not the metric.
        def.not_applicable
            .retain(|r| r.counters.values().all(|c| explain(list, c).is_none()));
        let problems: Vec<String> = def
            .counters
            .values()
            .filter_map(|c| explain(list, c))
            .collect();
        if problems.is_empty() {
            out.collectable.push(def);
        } else if metrics::is_raw_metric(&def) {
            return Err(QueryError::UnknownCounter {
                problems: problems.join("; "),
            });
        } else {
            out.unavailable.push((
                def.name.clone(),
                format!("this GPU cannot collect {}", problems.join("; ")),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> DeviceMetrics {
        // Stored gzipped (1 MB plain).
        let gz = std::fs::File::open(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ncu-h200/query-metrics.txt.gz"
        ))
        .unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(gz), &mut text).unwrap();
        let mut blocks = parse_query_metrics(&text).unwrap();
        assert_eq!(blocks.len(), 1);
        blocks.remove(0)
    }

    #[test]
    fn the_h200_list_is_read_with_its_device_chip_and_types() {
        let l = h200();
        assert_eq!(
            (l.device.as_str(), l.chip.as_str()),
            ("NVIDIA H200", "gh100")
        );
        assert_eq!(
            l.metrics.get("sm__warps_active"),
            Some(&MetricKind::Counter)
        );
        assert_eq!(
            l.metrics
                .get("smsp__sass_average_branch_targets_threads_uniform"),
            Some(&MetricKind::Ratio)
        );
        assert_eq!(
            l.metrics.get("gpu__compute_memory_throughput"),
            Some(&MetricKind::Throughput)
        );
        // Wrapped description lines are not metrics.
        assert!(
            !l.metrics
                .keys()
                .any(|k| k.starts_with("activity") || k.starts_with("allocation"))
        );
        assert!(
            l.metrics
                .contains_key("FBSP.TriageCompute.dramc__cycles_elapsed")
        );
        assert!(l.metrics.len() > 3000, "{}", l.metrics.len());
    }

    #[test]
    fn names_are_split_at_the_first_dot_after_the_unit() {
        assert_eq!(
            split_name("sm__warps_active.avg.pct_of_peak_sustained_active"),
            ("sm__warps_active", "avg.pct_of_peak_sustained_active")
        );
        assert_eq!(
            split_name("FBSP.TriageCompute.dramc__cycles_elapsed.sum"),
            ("FBSP.TriageCompute.dramc__cycles_elapsed", "sum")
        );
        assert_eq!(split_name("launch__grid_size"), ("launch__grid_size", ""));
    }

    #[test]
    fn rollups_submetrics_and_ratio_suffixes() {
        let l = h200();
        for ok in [
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "dram__bytes_read.sum.per_second",
            "smsp__sass_average_branch_targets_threads_uniform.pct",
            "smsp__thread_inst_executed_per_inst_executed.ratio",
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__cycles_elapsed.avg.peak_sustained_elapsed.per_second",
        ] {
            assert_eq!(l.check(ok), Verdict::Collectable, "{ok}");
        }
        assert_eq!(l.check("device__attribute_display_name"), Verdict::Unlisted);
        assert_eq!(l.check("launch__registers_per_thread"), Verdict::Unlisted);
        assert_eq!(l.check("profiler__replayer_passes"), Verdict::Unlisted);
        assert_eq!(
            l.check("profiler__replayer_bytes_mem_accessible.avg"),
            Verdict::Unlisted
        );
        match l.check("sm__warps_active.pct") {
            Verdict::BadSuffix { expected, .. } => assert!(expected.contains(".sum"), "{expected}"),
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            l.check("smsp__sass_average_branch_targets_threads_uniform.sum"),
            Verdict::BadSuffix { .. }
        ));
        assert!(matches!(
            l.check("sm__warps_active"),
            Verdict::BadSuffix { .. }
        ));
        match l.check("l1tex__t_sector_pipe_lsu_mem_global_op_ld.sum") {
            Verdict::UnknownBase { suggestions, .. } => {
                assert_eq!(suggestions[0], "l1tex__t_sectors_pipe_lsu_mem_global_op_ld")
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn every_metric_column_of_real_raw_exports_passes() {
        // Whatever ncu itself reported on an H100/H200 must not be rejected.
        let list = h200();
        for file in [
            "h200/transpose-raw-8192x8192.csv",
            "h100/transpose-raw-2048x1024.csv",
            "ncu-h200/raw-import-speedoflight.csv",
        ] {
            let text = std::fs::read_to_string(format!(
                "{}/tests/fixtures/{file}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap();
            for name in crate::parse::read_ncu_csv(text)
                .unwrap()
                .metric_names()
                .unwrap()
            {
                assert_eq!(explain(&list, &name), None, "{file}: {name}");
            }
        }
    }

    #[test]
    fn screening_errors_on_misspelt_raw_names_and_leaves_out_uncollectable_metrics() {
        let list = h200();
        let catalog = crate::metrics::Catalog::builtin().unwrap();
        let all = catalog
            .resolve(&catalog.metrics.keys().cloned().collect::<Vec<_>>())
            .unwrap();
        let s = screen(all.clone(), &list).unwrap();
        assert_eq!(
            s.collectable.len(),
            all.len(),
            "every built-in metric is collectable on Hopper: {:?}",
            s.unavailable
        );

        let err = screen(
            catalog
                .resolve(&["l1tex__t_sector_pipe_lsu_mem_global_op_ld.sum".into()])
                .unwrap(),
            &list,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("closest: l1tex__t_sectors_pipe_lsu_mem_global_op_ld")
                && err.contains("fix:"),
            "{err}"
        );

        let mut future = catalog.metrics["gld_efficiency"].clone();
        future
            .counters
            .insert("extra".into(), "l1tex__bytes_future.sum".into());
        let s = screen(vec![future, catalog.metrics["duration"].clone()], &list).unwrap();
        assert_eq!(s.collectable.len(), 1);
        assert_eq!(s.unavailable[0].0, "gld_efficiency");
        assert!(
            s.unavailable[0].1.contains("l1tex__bytes_future"),
            "{}",
            s.unavailable[0].1
        );
    }

    #[test]
    fn a_not_applicable_rule_over_counters_the_gpu_lacks_is_dropped_not_the_metric() {
        let list = h200();
        let catalog = crate::metrics::Catalog::builtin().unwrap();
        let mut older = catalog.metrics["gld_efficiency"].clone();
        let rules = older.not_applicable.len();
        // As a GPU before Hopper: no TMA counter.
        older.not_applicable[1].counters.insert(
            "tma".into(),
            "smsp__inst_executed_op_tma_ld_future.sum".into(),
        );
        let s = screen(vec![older], &list).unwrap();
        assert_eq!(s.collectable.len(), 1);
        assert_eq!(s.collectable[0].not_applicable.len(), rules - 1);
        assert!(
            s.collectable[0]
                .not_applicable
                .iter()
                .all(|r| !r.counters.values().any(|c| c.contains("future")))
        );
    }

    #[test]
    fn output_without_a_list_is_an_error() {
        assert!(parse_query_metrics("==ERROR== No supported devices found\n").is_err());
        let two = "Device A (GA100)\nMetric Name Metric Type\nx__y Counter cycle d\nDevice B (GH100)\nz__w Ratio  d\n";
        let blocks = parse_query_metrics(two).unwrap();
        assert_eq!(
            blocks.iter().map(|b| b.chip.as_str()).collect::<Vec<_>>(),
            ["ga100", "gh100"]
        );
    }
}
