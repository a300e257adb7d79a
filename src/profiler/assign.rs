//! Which profiled kernel belongs to which job (by launch order, checked by name, grid and block), and a job's metrics from its kernels' counters (pure).

use std::collections::BTreeMap;

use crate::metrics::{self, LaunchValue, MetricDef};
use crate::parse::KernelRow;
use crate::records::ProfileRecord;
use crate::suite::JobSpec;

/// Splits the profiled kernels among jobs by launch order (the profile pass launches each job's
/// kernels once, in job order). Each kernel's name, grid and block are compared with the launch
/// expected there, so a stray or missing launch is reported instead of shifting metrics silently.
pub fn assign_kernels<'a>(
    jobs: &[&'a JobSpec],
    kernels: &[KernelRow],
) -> Vec<(&'a JobSpec, Result<Vec<KernelRow>, String>)> {
    let mut next = 0usize;
    let mut out = Vec::new();
    for job in jobs {
        let n = job.launches.len();
        if next + n > kernels.len() {
            out.push((*job, Err(format!("ncu reported {} kernels, fewer than the jobs launched; the profile pass stopped early", kernels.len()))));
            next = kernels.len();
            continue;
        }
        let rows = kernels[next..next + n].to_vec();
        let dims = |d: &[u32; 3]| format!("({}, {}, {})", d[0], d[1], d[2]);
        let mismatch = rows.iter().zip(&job.launches).find(|(r, l)| {
            !kernel_name_matches(&r.kernel_name, &l.kernel)
                || r.grid_size != dims(&l.grid)
                || r.block_size != dims(&l.block)
        });
        out.push((
            *job,
            match mismatch {
                Some((r, l)) => Err(format!(
                    "expected kernel `{}` grid {} block {} but ncu profiled `{}` grid {} block {}",
                    l.kernel,
                    dims(&l.grid),
                    dims(&l.block),
                    r.kernel_name,
                    r.grid_size,
                    r.block_size
                )),
                None => Ok(rows),
            },
        ));
        next += n;
    }
    out
}

/// ncu prints `name` (its base name, as for `axpy<float>` or `wt::gemm<64>`), or a demangled
/// signature `name(args)` / `void ns::name<...>(...)`: the function's own names must agree.
pub(crate) fn kernel_name_matches(reported: &str, wanted: &str) -> bool {
    reported_base_name(reported) == crate::cxx::base_name(wanted)
}

/// The function's own name in a profiler's or sanitizer's kernel name (`name`, `name(args)`,
/// `void ns::name<...>(...)`): `name`.
pub fn reported_base_name(reported: &str) -> String {
    let base = reported
        .split('(')
        .next()
        .unwrap_or(reported)
        .split('<')
        .next()
        .unwrap_or(reported);
    crate::cxx::base_name(base.trim().rsplit(' ').next().unwrap_or(""))
}

/// Computes a job's metrics from its kernels' counters. A formula that cannot be evaluated is a
/// bug in its definition: the metric is left out and the record's error names it.
pub fn profile_record(
    job: &JobSpec,
    defs: &[MetricDef],
    rows: &[KernelRow],
    report_file: Option<String>,
) -> ProfileRecord {
    let mut values = BTreeMap::new();
    let mut not_applicable = BTreeMap::new();
    let mut missing = Vec::new();
    let mut errors = Vec::new();
    if rows.iter().any(|r| r.looks_faulted()) {
        errors.push(
            "ncu reported nan values or a (0, 0, 0) grid: the kernel faulted under the profiler"
                .to_string(),
        );
    }
    for def in defs {
        let mut per_launch = Vec::new();
        let mut undefined = false;
        let mut reason = None;
        let mut absent = false;
        let launch_values: Vec<&BTreeMap<String, f64>> = rows.iter().map(|r| &r.values).collect();
        let evaluated = metrics::evaluate_launches(&launch_values, &[def]);
        let evaluated = match evaluated {
            Ok(v) => v,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        for (r, value) in rows.iter().zip(evaluated) {
            let duration = r.values.get(metrics::DURATION).copied().unwrap_or(0.0);
            match value {
                LaunchValue::Value(v) => per_launch.push((v, duration)),
                LaunchValue::NotApplicable(rule) => {
                    undefined = true;
                    reason = reason.or(def.not_applicable_reason(rule));
                }
                LaunchValue::Missing => absent = true,
            }
        }
        if absent {
            missing.push(def.name.clone());
        } else {
            let value = if per_launch.is_empty() && undefined {
                None
            } else {
                metrics::aggregate(def, &per_launch)
            };
            if let (None, Some(why)) = (value, reason) {
                not_applicable.insert(def.name.clone(), why.to_string());
            }
            values.insert(def.name.clone(), value);
        }
    }
    let passes = rows
        .iter()
        .filter_map(|r| r.values.get("profiler__replayer_passes"))
        .copied()
        .reduce(f64::max);
    ProfileRecord {
        job_id: job.key.id.clone(),
        metrics: values,
        missing,
        kernels: rows.iter().map(|r| r.kernel_name.clone()).collect(),
        passes,
        report_file,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        gpu: None,
        not_applicable,
        duration_from: None,
        profiler: None,
        hotspots: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn names_match_plain_and_demangled() {
        assert!(kernel_name_matches("transpose_naive", "transpose_naive"));
        // C++ kernels: ncu gives the base name, or the demangled signature with its namespace.
        assert!(kernel_name_matches("axpy", "axpy<__half>"));
        assert!(kernel_name_matches(
            "void wt::gemm<64, float>(int, float *)",
            "wt::gemm<64, float>"
        ));
        assert!(kernel_name_matches(
            "block_sum",
            "red::block_sum<float, 256, 8>"
        ));
        assert!(!kernel_name_matches(
            "block_sum_half2",
            "red::block_sum<float, 256, 8>"
        ));
        assert!(kernel_name_matches(
            "void transposeUnrolled<32, 8>(const float *, float *, int)",
            "transposeUnrolled"
        ));
        assert!(kernel_name_matches(
            "copy_row(float*, float*, int, int)",
            "copy_row"
        ));
        assert!(!kernel_name_matches("copy_row_x", "copy_row"));
    }

    /// A job of one `copy` launch of `grid` blocks of 256 threads, for tests of the mapping.
    pub(crate) fn job(id: &str, grid: u32) -> JobSpec {
        use crate::suite::{CorrectnessSpec, JobKey, LaunchSpec, Program};
        JobSpec {
            key: JobKey {
                id: id.into(),
                variant: id.into(),
                ..Default::default()
            },
            suite: "s".into(),
            program: Program {
                source_path: "k.cu".into(),
                options: vec![],
                include_dirs: vec![],
                compiler: Default::default(),
                rdc: false,
                arch_specific: false,
            },
            launches: vec![LaunchSpec {
                kernel: "copy".into(),
                grid: [grid, 1, 1],
                block: [256, 1, 1],
                shared_bytes: 0,
                args: vec![],
                cluster: None,
                pdl: false,
                grid_of_sms: None,
            }],
            buffers: vec![],
            correctness: CorrectnessSpec::None,
            reference: None,
            bound: Default::default(),
            pending_launches: None,
            noise_threshold_pct: None,
            work: Default::default(),
            steps: None,
            tensor_maps: vec![],
        }
    }

    #[test]
    fn kernels_are_assigned_by_order_and_checked_by_name_grid_and_block() {
        let row = |id: u64, grid: u32| KernelRow {
            id,
            process_id: "1".into(),
            kernel_name: "copy".into(),
            block_size: "(256, 1, 1)".into(),
            grid_size: format!("({grid}, 1, 1)"),
            device: "0".into(),
            cc: "9.0".into(),
            values: Default::default(),
            text: Default::default(),
        };
        let (a, b) = (job("a", 10), job("b", 20));
        let ok = assign_kernels(&[&a, &b], &[row(0, 10), row(1, 20)]);
        assert!(ok.iter().all(|(_, r)| r.is_ok()));
        // Same kernel name, but the launch of `a` is missing: `b` must not get `a`'s metrics.
        let shifted = assign_kernels(&[&a, &b], &[row(0, 20)]);
        assert!(
            shifted[0]
                .1
                .as_ref()
                .unwrap_err()
                .contains("grid (10, 1, 1)")
        );
        assert!(shifted[1].1.as_ref().unwrap_err().contains("stopped early"));
    }

    #[test]
    fn a_kernel_loading_only_through_cp_async_reads_na_with_the_reason() {
        let defs = metrics::Catalog::builtin()
            .unwrap()
            .resolve(&["gld_efficiency".into()])
            .unwrap();
        let mut values: BTreeMap<String, f64> = metrics::counters_needed(&defs)
            .into_iter()
            .map(|c| (c, 0.0))
            .collect();
        values.insert("smsp__inst_executed_op_ldgsts.sum".into(), 4096.0);
        let row = KernelRow {
            id: 0,
            process_id: "1".into(),
            kernel_name: "copy".into(),
            block_size: "(256, 1, 1)".into(),
            grid_size: "(10, 1, 1)".into(),
            device: "0".into(),
            cc: "9.0".into(),
            values,
            text: Default::default(),
        };
        let record = profile_record(&job("a", 10), &defs, &[row], None);
        assert_eq!(
            record.metrics.get("gld_efficiency"),
            Some(&None),
            "never 0%: {record:?}"
        );
        assert_eq!(
            record
                .not_applicable
                .get("gld_efficiency")
                .map(String::as_str),
            Some("loads via cp.async/TMA")
        );
    }

    /// `strided_read`'s five launches of a committed H100 run as the launches of one job: ncu gave
    /// gld_efficiency_ncu as `100`, `50`, `25`, `12.50`, `12.50`; every launch counts in the mean.
    #[test]
    fn a_jobs_launches_mixing_whole_and_fractional_values_all_count() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/runs/20261122T054022Z-global-memory-h100-80gb-hbm3/profile-0.csv"
        ))
        .unwrap();
        let rows: Vec<KernelRow> = crate::parse::parse_ncu_csv(&text)
            .unwrap()
            .kernels
            .into_iter()
            .filter(|r| r.kernel_name == "strided_read")
            .collect();
        let defs = metrics::Catalog::builtin()
            .unwrap()
            .resolve(&["gld_efficiency_ncu".into()])
            .unwrap();
        let record = profile_record(&job("strided", 1), &defs, &rows, None);
        let durations: Vec<f64> = rows.iter().map(|r| r.values[metrics::DURATION]).collect();
        let weighted: f64 = [100.0, 50.0, 25.0, 12.5, 12.5]
            .iter()
            .zip(&durations)
            .map(|(v, d)| v * d)
            .sum();
        let expected = weighted / durations.iter().sum::<f64>();
        let got = record.metrics["gld_efficiency_ncu"].unwrap();
        assert!((got - expected).abs() < 1e-9, "{got} != {expected}");
        assert_eq!(record.error, None);
    }

    #[test]
    fn a_formula_error_is_the_records_error_not_a_value() {
        let mut c = metrics::Catalog::default();
        c.add_toml("user.toml", "[metrics.odd]\ndescription = \"d\"\nunit = \"\"\ncounters = { b = \"b__x.sum\" }\nformula = \"if(b > 0, b, false)\"\n").unwrap();
        let defs = c.resolve(&["odd".into(), "b__x.sum".into()]).unwrap();
        let row = KernelRow {
            id: 0,
            process_id: "1".into(),
            kernel_name: "copy".into(),
            block_size: "(256, 1, 1)".into(),
            grid_size: "(1, 1, 1)".into(),
            device: "0".into(),
            cc: "9.0".into(),
            values: BTreeMap::from([("b__x.sum".to_string(), 0.0)]),
            text: Default::default(),
        };
        let record = profile_record(&job("j", 1), &defs, &[row], None);
        assert!(!record.metrics.contains_key("odd") && record.metrics.contains_key("b__x.sum"));
        assert!(
            record
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with("metric `odd`: cannot evaluate")),
            "{:?}",
            record.error
        );
    }
}
