//! Comparisons of the committed H200 run with transformed copies of itself (the transformations are test data, not measurements).

use std::path::Path;

use super::*;
use crate::model::RunData;

fn committed(name: &str) -> RunData {
    crate::store::load_run(&Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs").join(name)).unwrap().0
}

fn h200() -> RunData {
    committed("20261122T044759Z-transpose-h200")
}

fn defs(run: &RunData) -> Vec<MetricDef> {
    run.info.metrics.clone()
}

fn check(base: &RunData, new: &RunData) -> Comparison {
    compare(base, "base", new, "new", &defs(base), &Settings::default())
}

const SMEM_PAD: &str = "smem_pad_32 @ NX=8192,NY=8192";

fn scale_job(run: &mut RunData, id: &str, k: f64) {
    let j = run.jobs.iter_mut().find(|j| j.id == id).unwrap();
    j.samples_ms.iter_mut().for_each(|x| *x *= k);
    j.summary = crate::stats::summarize(&j.samples_ms);
}

fn verdicts(c: &Comparison) -> Vec<(String, Verdict)> {
    c.jobs.iter().filter(|j| j.verdict != Verdict::Same).map(|j| (j.id.clone(), j.verdict)).collect()
}

#[test]
fn a_run_against_itself_is_the_same_everywhere() {
    let run = h200();
    let c = check(&run, &run);
    assert_eq!(c.jobs.len(), 92);
    assert!(verdicts(&c).is_empty(), "{:?}", verdicts(&c));
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    assert!(c.jobs.iter().all(|j| j.timing.as_ref().is_some_and(|t| t.change.estimate == 0.0) && !j.counters.is_empty()));
}

#[test]
fn one_job_twenty_percent_slower_regresses_alone() {
    let base = h200();
    let mut new = base.clone();
    scale_job(&mut new, SMEM_PAD, 1.2);
    let c = check(&base, &new);
    assert_eq!(verdicts(&c), vec![(SMEM_PAD.to_string(), Verdict::Regressed)]);
    let t = c.jobs.iter().find(|j| j.id == SMEM_PAD).unwrap().timing.clone().unwrap();
    assert!((t.change.estimate - 0.2).abs() < 1e-9 && t.change.low > 0.15 && t.change.high < 0.25, "{t:?}");
    assert!(c.regressed());
}

#[test]
fn one_job_twenty_percent_faster_improves() {
    let base = h200();
    let mut new = base.clone();
    scale_job(&mut new, SMEM_PAD, 1.0 / 1.2);
    let c = check(&base, &new);
    assert_eq!(verdicts(&c), vec![(SMEM_PAD.to_string(), Verdict::Improved)]);
    assert!(!c.regressed());
}

#[test]
fn a_counter_regression_is_caught_with_the_timing_unchanged() {
    let base = h200();
    let mut new = base.clone();
    new.profiles.get_mut(SMEM_PAD).unwrap().metrics.insert("shared_load_transactions_per_request".into(), Some(32.0));
    let c = check(&base, &new);
    assert_eq!(verdicts(&c), vec![(SMEM_PAD.to_string(), Verdict::Regressed)]);
    let job = c.jobs.iter().find(|j| j.id == SMEM_PAD).unwrap();
    assert_eq!(job.timing.as_ref().unwrap().verdict, Verdict::Same);
    let moved: Vec<_> = job.counters.iter().filter(|c| c.moved).collect();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].metric, "shared_load_transactions_per_request");
}

#[test]
fn a_memory_clock_change_is_reported_and_normalised_away() {
    let base = h200();
    let mut new = base.clone();
    // As if the memory clock had been halved and these memory-bound kernels took twice as long.
    for j in &mut new.jobs {
        for s in [&mut j.nvml_before, &mut j.nvml_after].into_iter().flatten() {
            s.mem_clock_mhz = s.mem_clock_mhz.map(|m| m / 2);
        }
        j.samples_ms.iter_mut().for_each(|x| *x *= 3201.0 / 1600.0);
    }
    let c = check(&base, &new);
    assert!(verdicts(&c).is_empty(), "{:?}", verdicts(&c));
    assert!(c.notes.iter().any(|n| n.contains("memory clock differs") && n.contains("3201 → 1600") && n.contains("92 of them")), "{:?}", c.notes);
    let t = c.jobs[0].timing.as_ref().unwrap();
    assert_eq!(t.clocks.len(), 1);
    assert!(t.clocks[0].normalised && t.change.estimate.abs() < 1e-9);
    // Without normalisation the same data is a regression everywhere.
    let raw = compare(&base, "base", &new, "new", &defs(&base), &Settings { normalize: Normalize::None, ..Settings::default() });
    assert_eq!(raw.count(Verdict::Regressed), 92);
}

#[test]
fn correctness_decides_before_timing() {
    let base = h200();
    let mut new = base.clone();
    new.jobs[3].status = JobStatus::Wrong;
    let gone = new.jobs.remove(5);
    let mut extra = new.jobs[0].clone();
    extra.id = "brand_new @ NX=4000,NY=4000".into();
    let mut extra_wrong = extra.clone();
    extra_wrong.id = "brand_new_wrong @ NX=4000,NY=4000".into();
    extra_wrong.status = JobStatus::Failed;
    new.jobs.extend([extra, extra_wrong]);
    let c = check(&base, &new);
    let v = |id: &str| c.jobs.iter().find(|j| j.id == id).unwrap().verdict;
    assert_eq!(v(&base.jobs[3].id), Verdict::Regressed);
    assert_eq!(v(&gone.id), Verdict::Missing);
    assert_eq!(v("brand_new @ NX=4000,NY=4000"), Verdict::New);
    assert_eq!(v("brand_new_wrong @ NX=4000,NY=4000"), Verdict::Regressed);
    // Wrong in both runs is no news; wrong then correct is an improvement.
    let mut was_wrong = base.clone();
    was_wrong.jobs[3].status = JobStatus::Wrong;
    assert_eq!(check(&was_wrong, &new).jobs.iter().find(|j| j.id == base.jobs[3].id).unwrap().verdict, Verdict::Same);
    assert_eq!(check(&was_wrong, &base).jobs.iter().find(|j| j.id == base.jobs[3].id).unwrap().verdict, Verdict::Improved);
}

#[test]
fn across_gpu_models_the_share_of_the_copy_bound_is_compared() {
    let base = h200();
    let mut h100 = committed("20261122T042230Z-transpose-h100-80gb-hbm3");
    assert!(other_gpu(&base, &h100).is_some());
    let s = Settings { relative_to_copy: true, ..Settings::default() };
    scale_job(&mut h100, SMEM_PAD, 1.5);
    let c = compare(&base, "h200", &h100, "h100", &defs(&base), &s);
    assert!(c.notes[0].starts_with("different GPU models (NVIDIA H200 → NVIDIA H100 80GB HBM3)"), "{:?}", c.notes);
    assert!(c.jobs.iter().all(|j| j.timing.as_ref().is_some_and(|t| t.clocks.is_empty())));
    let job = c.jobs.iter().find(|j| j.id == SMEM_PAD).unwrap();
    assert_eq!(job.verdict, Verdict::Regressed);
    let t = job.timing.as_ref().unwrap();
    assert!(t.new_pct_of_copy.unwrap() < t.base_pct_of_copy.unwrap());
}

#[test]
fn verdict_reports_put_regressions_first_and_compare_shows_no_verdicts() {
    let base = h200();
    let mut new = base.clone();
    scale_job(&mut new, SMEM_PAD, 1.2);
    let c = check(&base, &new);
    let md = exporter("md").unwrap().render(&c, true).unwrap();
    let first_row = md.lines().find(|l| l.starts_with("| **Regressed**") || l.starts_with("| Same")).unwrap();
    assert!(first_row.contains("smem_pad_32") && first_row.contains("+20.0%"), "{first_row}");
    assert!(md.contains("**REGRESSED: 1 of 92 jobs**"));
    let side = exporter("md").unwrap().render(&c, false).unwrap();
    assert!(!side.contains("Regressed") && !side.contains("| Same"));
    let json: serde_json::Value = serde_json::from_str(&exporter("json").unwrap().render(&c, true).unwrap()).unwrap();
    assert_eq!(json["regressed"], true);
    assert_eq!(json["counts"]["regressed"], 1);
    let plain = exporter("json").unwrap().render(&c, false).unwrap();
    assert!(!plain.contains("\"verdict\""));
}
