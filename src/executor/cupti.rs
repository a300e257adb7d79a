//! A pass profiled in process: the `__cupti` child collects each job's counters through CUPTI, and the same kernel mapping and formulas as ncu's pass make its records; where CUPTI cannot, the pass goes to ncu and its records say why.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::contract::RunContext;
use super::job_server::CuptiRequest;
use crate::cupti::crosscheck::{Crosscheck, PrintedRounding};
use crate::cupti::rows::{
    CuptiJob, CuptiPass, add_launch_stats, job_rows, split_computed, why_not_cupti,
};
use crate::metrics::{self, MetricDef};
use crate::parse::resolution::printed_resolution;
use crate::parse::{KernelRow, parse_ncu_csv};
use crate::process;
use crate::profiler::assign::{assign_kernels, profile_record};
use crate::records::ProfileRecord;
use crate::store::write_json;
use crate::suite::JobSpec;

/// What `duration_from` says of a duration CUPTI collected.
pub const CUPTI_DURATION: &str = "CUPTI: gpu__time_duration in the metric set's own replay (L2 flushed and inputs put back before each pass)";

/// What `profiler` says of records CUPTI made.
pub const BY_CUPTI: &str = "cupti";

/// What `profiler` says of records CUPTI made where gpu-lab computed ncu's launch statistics
/// (`cupti::launch_stats`); each row's text says which and from what.
pub const BY_CUPTI_COMPUTED: &str = "cupti, with the launch statistics and theoretical occupancy computed by gpu-lab (not measured)";

/// The files of one pass, for whichever process collects it (the serving child, or a `__cupti`
/// child of its own), and how long it may take.
pub struct PassFiles<'a> {
    pub request: CuptiRequest,
    pub log: &'a Path,
    pub timeout: Duration,
}

/// Records of the pass from CUPTI, or the reason it must go to ncu instead; `collect_in` runs
/// the pass in a process that writes what it collected to the request's `out`.
pub fn profile(
    collect_in: impl FnOnce(PassFiles) -> Result<(), String>,
    ctx: &RunContext,
    tag: &str,
    jobs: &[&JobSpec],
) -> Result<Vec<ProfileRecord>, String> {
    let pass = collect(collect_in, ctx, tag, jobs)?;
    Ok(records(&pass, jobs, ctx.metrics))
}

/// What CUPTI collected over the pass, or the reason it must go to ncu instead.
pub fn collect(
    collect_in: impl FnOnce(PassFiles) -> Result<(), String>,
    ctx: &RunContext,
    tag: &str,
    jobs: &[&JobSpec],
) -> Result<CuptiPass, String> {
    let (computed, counters) = split_computed(&metrics::counters_needed(ctx.metrics));
    if let Some(why) = why_not_cupti(&counters) {
        return Err(why);
    }
    let (specs, list, out, log) = (
        ctx.work.join(format!("{tag}.cupti-specs.json")),
        ctx.work.join(format!("{tag}.cupti-counters.json")),
        ctx.dir.join(format!("{tag}.cupti.json")),
        ctx.dir.join(format!("{tag}.cupti.log")),
    );
    write_json(&specs, &jobs)
        .and_then(|_| write_json(&list, &counters))
        .map_err(|e| format!("{e:#}"))?;
    let request = CuptiRequest {
        specs,
        counters: list,
        out: out.clone(),
        seed: ctx.seed,
    };
    let mut pass = run(collect_in, ctx, request, &log, jobs.len())?;
    pass.computed = computed;
    // The pass's file says which counters were computed and what the pass cost as a whole; one
    // that cannot be rewritten only loses those lines (the records say which were computed too).
    let _ = write_json(&out, &pass);
    Ok(pass)
}

/// A job's rows from its collection, with the values gpu-lab computes in ncu's place.
fn rows_of(
    pass: &CuptiPass,
    job: &JobSpec,
    entry: Option<&CuptiJob>,
) -> Result<Vec<KernelRow>, String> {
    let entry = entry.ok_or_else(|| "the CUPTI pass has no entry for this job".to_string())?;
    let c = entry
        .collected
        .as_ref()
        .map_err(|why| format!("CUPTI: {why}"))?;
    let mut rows = job_rows(job, &pass.counters, c, &pass.chip)?;
    add_launch_stats(&mut rows, &pass.computed, entry);
    Ok(rows)
}

/// CUPTI's pass against ncu's raw page of the same jobs (`ncu_csv`): every counter CUPTI
/// collected, launch by launch, and every metric, both evaluated by the same formulas from
/// their rows. A job either profiler could not do is named, not compared.
pub fn crosscheck(
    pass: &CuptiPass,
    jobs: &[&JobSpec],
    defs: &[MetricDef],
    ncu_csv: &str,
) -> Crosscheck {
    let mut check = Crosscheck::default();
    let compared: Vec<String> = pass
        .counters
        .iter()
        .chain(&pass.computed)
        .cloned()
        .collect();
    // The page parsed, so its columns' rounding can be read (a page without it compares exactly).
    let printed = printed_resolution(ncu_csv).unwrap_or_default();
    let ncu_rows = match parse_ncu_csv(ncu_csv) {
        Ok(parsed) => assign_kernels(jobs, &parsed.kernels),
        Err(e) => {
            for job in jobs {
                check.add_unmatched(job.id(), &format!("ncu's raw page: {e}"));
            }
            return check;
        }
    };
    for (job, ncu) in ncu_rows {
        let entry = pass.jobs.iter().find(|j| j.job_id == job.id());
        let cupti = rows_of(pass, job, entry);
        match (cupti, ncu) {
            (Ok(c), Ok(n)) => {
                let ncu_record = profile_record(job, defs, &n, None);
                let rounding = PrintedRounding {
                    metrics: metric_rounding(job, defs, &n, &ncu_record, &printed),
                    counters: &printed,
                };
                check.add_job(
                    &compared,
                    &rounding,
                    (&c, &n),
                    (&profile_record(job, defs, &c, None), &ncu_record),
                )
            }
            (Err(why), _) => check.add_unmatched(job.id(), &why),
            (_, Err(why)) => check.add_unmatched(job.id(), &format!("ncu: {why}")),
        }
    }
    check
}

/// Each metric's rounding from ncu's printed rounding of its counters, to first order: the sum,
/// over the counters, of how far the metric moves when that counter moves by its rounding in
/// every launch of the job.
fn metric_rounding(
    job: &JobSpec,
    defs: &[MetricDef],
    rows: &[KernelRow],
    record: &ProfileRecord,
    printed: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    // Only the counters the formulas read: the page holds hundreds more (device attributes).
    let needed = metrics::counters_needed(defs);
    let used = printed.iter().filter(|(name, _)| {
        needed.contains(*name) && rows.iter().any(|r| r.values.contains_key(*name))
    });
    for (name, step) in used {
        let mut moved = rows.to_vec();
        for row in &mut moved {
            if let Some(v) = row.values.get_mut(name) {
                *v += step;
            }
        }
        let after = profile_record(job, defs, &moved, None);
        for (metric, value) in &record.metrics {
            if let (Some(a), Some(Some(b))) = (value, after.metrics.get(metric)) {
                *out.entry(metric.clone()).or_default() += (b - a).abs();
            }
        }
    }
    out
}

fn run(
    collect_in: impl FnOnce(PassFiles) -> Result<(), String>,
    ctx: &RunContext,
    request: CuptiRequest,
    log: &Path,
    jobs: usize,
) -> Result<CuptiPass, String> {
    let out = request.out.clone();
    // Each job runs once per pass: allow a job's time per job, as ncu's pass does.
    let timeout = ctx
        .timeout
        .saturating_mul(u32::try_from(jobs + 1).unwrap_or(u32::MAX));
    let started = std::time::Instant::now();
    collect_in(PassFiles {
        request,
        log,
        timeout,
    })
    .map_err(|e| format!("the CUPTI pass failed: {e} (log: {})", log.display()))?;
    let mut pass: CuptiPass =
        process::read_result(&out).map_err(|e| format!("the CUPTI pass's result: {e}"))?;
    // The pass's whole cost as this process saw it, beside its own phases (`collect` writes it
    // into the pass's file).
    pass.phases.child_wall_s = started.elapsed().as_secs_f64();
    Ok(pass)
}

/// Each job's record from its collection, by the same formulas as ncu's rows.
pub fn records(pass: &CuptiPass, jobs: &[&JobSpec], defs: &[MetricDef]) -> Vec<ProfileRecord> {
    jobs.iter()
        .map(|job| {
            let entry = pass.jobs.iter().find(|j| j.job_id == job.id());
            let rows = rows_of(pass, job, entry);
            let mut record = match rows {
                Ok(rows) => profile_record(job, defs, &rows, None),
                Err(why) => ProfileRecord::failed(job.id(), why, None),
            };
            if record.metrics.contains_key(metrics::DURATION_METRIC) {
                record.duration_from = Some(CUPTI_DURATION.to_string());
            }
            record.profiler = Some(
                if pass.computed.is_empty() {
                    BY_CUPTI
                } else {
                    BY_CUPTI_COMPUTED
                }
                .to_string(),
            );
            record
        })
        .collect()
}

/// What `profiler` says of records ncu made in CUPTI's place.
pub fn by_ncu_because(why: &str) -> String {
    format!("ncu, since CUPTI could not: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cupti::rows::CuptiPass;
    use crate::metrics::Catalog;
    use crate::profiler::assign::tests::job;

    const CUPTI: &str = include_str!("../../tests/fixtures/cupti/shared-memory-h200.cupti.json");
    const NCU: &str = include_str!("../../tests/fixtures/cupti/shared-memory-h200.ncu.csv");

    /// The two jobs of the captured pass: one `smem_tile` launch each.
    fn jobs() -> Vec<JobSpec> {
        [
            "row_write_col_read @ NX=8192,NY=8192",
            "row_write_col_read_pad @ NX=8192,NY=8192",
        ]
        .iter()
        .map(|id| {
            let mut j = job(id, 1);
            j.launches[0].kernel = "smem_tile".into();
            j.launches[0].grid = [256, 256, 1];
            j.launches[0].block = [32, 32, 1];
            j
        })
        .collect()
    }

    fn shared_set() -> Vec<MetricDef> {
        let names = [
            "shared_load_transactions_per_request",
            "shared_store_transactions_per_request",
            "shared_efficiency",
            "shared_bank_conflicts",
            "dram_read_throughput",
            "dram_write_throughput",
            "duration",
        ];
        Catalog::builtin()
            .unwrap()
            .resolve(&names.map(String::from))
            .unwrap()
    }

    #[test]
    fn captured_counters_make_every_metric_of_the_set_as_ncu_does() {
        let pass: CuptiPass = serde_json::from_str(CUPTI).unwrap();
        let (jobs, defs) = (jobs(), shared_set());
        let refs: Vec<&JobSpec> = jobs.iter().collect();
        let cupti = records(&pass, &refs, &defs);
        let ncu_rows = parse_ncu_csv(NCU).unwrap().kernels;
        let ncu: Vec<ProfileRecord> = assign_kernels(&refs, &ncu_rows)
            .into_iter()
            .map(|(j, rows)| profile_record(j, &defs, &rows.unwrap(), None))
            .collect();
        for (c, n) in cupti.iter().zip(&ncu) {
            assert_eq!(c.error, None, "{c:?}");
            assert_eq!(c.profiler.as_deref(), Some(BY_CUPTI));
            assert_eq!(c.duration_from.as_deref(), Some(CUPTI_DURATION));
            assert_eq!(c.passes, Some(2.0));
            assert_eq!(c.kernels, vec!["smem_tile".to_string()]);
            for def in &defs {
                let (cv, nv) = (c.metrics[&def.name].unwrap(), n.metrics[&def.name].unwrap());
                // Two runs 18 s apart: bank conflicts and DRAM rates move a little from run to
                // run; anything past 6% would be a wrong counter, not noise.
                assert!(
                    (cv / nv - 1.0).abs() < 0.06,
                    "{} {}: CUPTI {cv} ncu {nv}",
                    c.job_id,
                    def.name
                );
            }
        }
    }

    #[test]
    fn computed_launch_statistics_make_the_occupancy_metrics_as_ncus_rows_do() {
        use crate::cupti::crosscheck::Kind;
        use crate::cupti::launch_stats::tests::facts_of;
        let names = [
            "registers_per_thread",
            "occupancy_limit_registers",
            "occupancy_limit_shared_mem",
            "occupancy_limit_block_size",
            "occupancy_limit_blocks",
            "theoretical_occupancy",
        ];
        let defs = Catalog::builtin()
            .unwrap()
            .resolve(&names.map(String::from))
            .unwrap();
        let mut pass: CuptiPass = serde_json::from_str(CUPTI).unwrap();
        let ncu_rows = parse_ncu_csv(NCU).unwrap().kernels;
        pass.computed = split_computed(&metrics::counters_needed(&defs)).0;
        assert_eq!(pass.computed.len(), 6, "{:?}", pass.computed);
        for (entry, row) in pass.jobs.iter_mut().zip(&ncu_rows) {
            entry.launches = vec![facts_of(row)];
        }
        let jobs = jobs();
        let refs: Vec<&JobSpec> = jobs.iter().collect();
        for (c, row) in records(&pass, &refs, &defs).iter().zip(&ncu_rows) {
            assert_eq!(c.profiler.as_deref(), Some(BY_CUPTI_COMPUTED));
            assert_eq!(c.metrics["occupancy_limit_shared_mem"], Some(3.0), "{c:?}");
            assert_eq!(c.metrics["theoretical_occupancy"], Some(100.0));
            assert_eq!(
                c.metrics["registers_per_thread"],
                Some(row.values["launch__registers_per_thread"])
            );
        }
        let check = crosscheck(&pass, &refs, &defs, NCU);
        assert!(check.unmatched.is_empty(), "{:?}", check.unmatched);
        let computed: Vec<_> = check
            .differences
            .iter()
            .filter(|d| pass.computed.contains(&d.name) || names.contains(&d.name.as_str()))
            .collect();
        assert_eq!(computed.len(), 2 * 6 + 2 * 6, "{computed:?}");
        assert!(computed.iter().all(|d| d.relative == 0.0), "{computed:?}");
        assert!(check.tally(Kind::Counter).all >= 2 * pass.counters.len() + 12);
        // A job whose facts the child could not read: its launch metrics are missing, and why.
        pass.jobs[1].launches.clear();
        pass.jobs[1].launches_error = Some("CUPTI's kernel activity: not loaded".into());
        let r = records(&pass, &refs, &defs);
        assert!(
            r[1].missing.contains(&"theoretical_occupancy".to_string()),
            "{:?}",
            r[1]
        );
        let entry = &pass.jobs[1];
        let rows = rows_of(&pass, &jobs[1], Some(entry)).unwrap();
        assert!(rows[0].text[crate::cupti::rows::NOT_COMPUTED].contains("not loaded"));
    }

    #[test]
    fn every_built_in_set_stays_in_process() {
        // The six suites of the `compute` and `occupancy` sets went to ncu whole before.
        let catalog = Catalog::builtin().unwrap();
        for (name, set) in &catalog.sets {
            let defs = catalog.resolve(&set.metrics).unwrap();
            let (_, collected) = split_computed(&metrics::counters_needed(&defs));
            assert_eq!(why_not_cupti(&collected), None, "set {name}");
        }
        assert!(catalog.sets.contains_key("occupancy") && catalog.sets.contains_key("compute"));
    }

    #[test]
    fn counted_instructions_equal_ncus_exactly() {
        let pass: CuptiPass = serde_json::from_str(CUPTI).unwrap();
        let jobs = jobs();
        let ncu_rows = parse_ncu_csv(NCU).unwrap().kernels;
        for (j, entry) in pass.jobs.iter().enumerate() {
            let collection = entry.collected.as_ref().unwrap();
            let rows = job_rows(&jobs[j], &pass.counters, collection, &pass.chip).unwrap();
            for counter in [
                "smsp__inst_executed_op_shared_ld.sum",
                "smsp__inst_executed_op_shared_st.sum",
                "smsp__sass_inst_executed_op_shared.sum",
            ] {
                assert_eq!(
                    rows[0].values[counter], ncu_rows[j].values[counter],
                    "{counter}"
                );
            }
        }
    }

    #[test]
    fn both_profilers_on_the_captured_passes_agree_on_every_counted_instruction() {
        use crate::cupti::crosscheck::Kind;
        let pass: CuptiPass = serde_json::from_str(CUPTI).unwrap();
        let jobs = jobs();
        let refs: Vec<&JobSpec> = jobs.iter().collect();
        let mut check = crosscheck(&pass, &refs, &shared_set(), NCU);
        check.sort();
        assert!(check.unmatched.is_empty(), "{:?}", check.unmatched);
        // Every counter of both launches, every metric of both jobs.
        assert_eq!(check.tally(Kind::Counter).all, 2 * pass.counters.len());
        assert_eq!(check.tally(Kind::Metric).all, 2 * shared_set().len());
        for d in &check.differences {
            if d.name.contains("inst_executed") {
                assert_eq!(d.relative, 0.0, "{d:?}");
            }
            // The largest differences of these captures (18 s apart) are timing's, under 6%.
            assert!(d.relative < 0.06, "{d:?}");
        }
        let md = check.markdown(3);
        assert!(md.contains("| counter | row_write_col_read"), "{md}");
        // Every metric carries its counters' printed rounding through its formula: more than
        // nothing, less than the value's own 1% where the value is not tiny.
        for d in check.differences.iter().filter(|d| d.kind == Kind::Metric) {
            let (Some(n), Some(r)) = (d.ncu, d.ncu_resolution) else {
                panic!("{d:?}");
            };
            assert!(r > 0.0 && (n.abs() < 1.0 || r < 0.01 * n.abs()), "{d:?}");
        }
    }

    #[test]
    fn a_ratio_of_printed_counters_gets_their_rounding_carried_through() {
        // wavefronts / requests = 10 / 4, each printed as a whole number (rounding 0.5): the
        // ratio is known to about 0.40, 0.5 / 4 from the wavefronts and 2.5 - 10 / 4.5 from the
        // requests.
        let defs = Catalog::builtin()
            .unwrap()
            .resolve(&["shared_load_transactions_per_request".to_string()])
            .unwrap();
        let job = &jobs()[0];
        let mut row = parse_ncu_csv(NCU).unwrap().kernels[0].clone();
        let (w, q) = (
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            "smsp__inst_executed_op_shared_ld.sum",
        );
        row.values = [(w.to_string(), 10.0), (q.to_string(), 4.0)].into();
        let rows = [row];
        let record = profile_record(job, &defs, &rows, None);
        let printed = [(w.to_string(), 0.5), (q.to_string(), 0.5)].into();
        let r = metric_rounding(job, &defs, &rows, &record, &printed);
        let r = r["shared_load_transactions_per_request"];
        assert!((r - (0.125 + (2.5 - 10.0 / 4.5))).abs() < 1e-12, "{r}");
    }

    #[test]
    fn the_h200_pass_of_profiler_both_compares_as_the_design_notes_quote() {
        use crate::cupti::crosscheck::Kind;
        let specs: Vec<JobSpec> = serde_json::from_str(include_str!(
            "../../tests/fixtures/cupti/both-shared-memory-h200.specs.json"
        ))
        .unwrap();
        let pass: CuptiPass = serde_json::from_str(include_str!(
            "../../tests/fixtures/cupti/both-shared-memory-h200.cupti.json"
        ))
        .unwrap();
        let ncu = include_str!("../../tests/fixtures/cupti/both-shared-memory-h200.ncu.csv");
        let refs: Vec<&JobSpec> = specs.iter().collect();
        let mut check = crosscheck(&pass, &refs, &shared_set(), ncu);
        check.sort();
        assert!(check.unmatched.is_empty(), "{:?}", check.unmatched);
        let (c, m) = (check.tally(Kind::Counter), check.tally(Kind::Metric));
        // 54 values, 20 equal, 43 within 1% (docs/design-notes.md), before ncu's printed rounding
        // was read: 16 counters equal as printed, the 15 equal ones and one within its rounding.
        let within_1pct = check
            .differences
            .iter()
            .filter(|d| d.relative <= 0.01)
            .count();
        assert_eq!(
            (c.all + m.all, c.equal + m.equal, within_1pct),
            (54, 20, 43)
        );
        assert_eq!(
            (c.equal, c.equal_as_printed, c.within + m.within),
            (15, 16, 43)
        );
        let top = &check.differences[0];
        assert_eq!(top.name, "dram__bytes_read.sum.per_second");
        assert!((top.relative - 0.01725).abs() < 1e-4, "{top:?}");
    }

    #[test]
    fn an_ncu_page_that_does_not_parse_leaves_every_job_named_and_uncompared() {
        let pass: CuptiPass = serde_json::from_str(CUPTI).unwrap();
        let jobs = jobs();
        let refs: Vec<&JobSpec> = jobs.iter().collect();
        let check = crosscheck(&pass, &refs, &shared_set(), "not,a,raw,page");
        assert!(check.differences.is_empty());
        assert_eq!(check.unmatched.len(), 2);
        assert!(
            check.unmatched[0].contains("ncu's raw page"),
            "{:?}",
            check.unmatched
        );
    }

    #[test]
    fn a_job_cupti_failed_gets_the_reason_and_no_numbers() {
        let mut pass: CuptiPass = serde_json::from_str(CUPTI).unwrap();
        pass.jobs[1].collected = Err("cuptiRangeProfilerStart failed".into());
        let jobs = jobs();
        let refs: Vec<&JobSpec> = jobs.iter().collect();
        let r = records(&pass, &refs, &shared_set());
        assert_eq!(r[0].error, None);
        let e = r[1].error.as_deref().unwrap();
        assert!(e.contains("CUPTI: cuptiRangeProfilerStart failed"), "{e}");
        assert!(r[1].metrics.is_empty());
    }

    #[test]
    fn a_range_count_other_than_the_launches_is_an_error() {
        let pass: CuptiPass = serde_json::from_str(CUPTI).unwrap();
        let mut two = jobs().remove(0);
        two.launches.push(two.launches[0].clone());
        let c = pass.jobs[0].collected.as_ref().unwrap();
        let e = job_rows(&two, &pass.counters, c, &pass.chip).unwrap_err();
        assert!(
            e.contains("CUPTI saw 1 kernels where the job launches 2"),
            "{e}"
        );
    }

    #[test]
    fn ncus_own_counters_send_the_pass_to_ncu_with_the_names() {
        let own = why_not_cupti(&[
            "launch__barrier_count".to_string(),
            "dram__bytes_read.sum".to_string(),
        ])
        .unwrap();
        assert!(
            own.starts_with("launch__barrier_count is ncu's own"),
            "{own}"
        );
        // What gpu-lab computes stays in process: the occupancy set's launch statistics.
        let (computed, collected) = split_computed(&[
            "launch__registers_per_thread".to_string(),
            "launch__occupancy_limit_shared_mem".to_string(),
            "sm__maximum_warps_per_active_cycle_pct".to_string(),
            "dram__bytes_read.sum".to_string(),
        ]);
        assert_eq!(computed.len(), 3);
        assert_eq!(why_not_cupti(&collected), None);
        assert_eq!(why_not_cupti(&["dram__bytes_read.sum".to_string()]), None);
        assert!(by_ncu_because(&own).starts_with("ncu, since CUPTI could not: "));
    }
}
