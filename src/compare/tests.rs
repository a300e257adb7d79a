//! Comparisons of the committed H200 run with transformed copies of itself (the transformations are test data, not measurements).

use std::path::Path;

use super::clocks::Normalize;
use super::counters::CounterChange;
use super::*;
use crate::records::{JobStatus, RunData};

fn committed(name: &str) -> RunData {
    crate::store::load_run(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs")
            .join(name),
    )
    .unwrap()
    .0
}

fn h200() -> RunData {
    committed("20261122T044759Z-transpose-h200")
}

/// The definitions `check` judges by: the built-in catalog's, where the runs stored the same names.
fn defs(base: &RunData, new: &RunData) -> Vec<MetricDef> {
    counters::definitions(
        &[&new.info.metrics, &base.info.metrics],
        &crate::metrics::Catalog::builtin().unwrap().metrics,
    )
}

fn check(base: &RunData, new: &RunData) -> Comparison {
    compare(
        base,
        "base",
        new,
        "new",
        &defs(base, new),
        &Settings::default(),
        true,
    )
}

const SMEM_PAD: &str = "smem_pad_32 @ NX=8192,NY=8192";

fn scale_job(run: &mut RunData, id: &str, k: f64) {
    let j = run.jobs.iter_mut().find(|j| j.id() == id).unwrap();
    j.samples_ms.iter_mut().for_each(|x| *x *= k);
    j.summary = crate::stats::summarize(&j.samples_ms);
}

fn verdicts(c: &Comparison) -> Vec<(String, Verdict)> {
    c.jobs
        .iter()
        .filter(|j| j.verdict != Verdict::Same)
        .map(|j| (j.id.clone(), j.verdict))
        .collect()
}

#[test]
fn a_run_against_itself_is_the_same_everywhere() {
    let run = h200();
    let c = check(&run, &run);
    assert_eq!(c.jobs.len(), 92);
    assert!(verdicts(&c).is_empty(), "{:?}", verdicts(&c));
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    assert!(c.jobs.iter().all(
        |j| j.timing.as_ref().is_some_and(|t| t.change.estimate == 0.0) && !j.counters.is_empty()
    ));
}

#[test]
fn one_job_twenty_percent_slower_regresses_alone() {
    let base = h200();
    let mut new = base.clone();
    scale_job(&mut new, SMEM_PAD, 1.2);
    let c = check(&base, &new);
    assert_eq!(
        verdicts(&c),
        vec![(SMEM_PAD.to_string(), Verdict::Regressed)]
    );
    let t = c
        .jobs
        .iter()
        .find(|j| j.id == SMEM_PAD)
        .unwrap()
        .timing
        .clone()
        .unwrap();
    assert!(
        (t.change.estimate - 0.2).abs() < 1e-9 && t.change.low > 0.15 && t.change.high < 0.25,
        "{t:?}"
    );
    assert!(c.regressed());
}

#[test]
fn a_suites_own_noise_threshold_widens_checks_for_its_jobs() {
    let base = h200();
    let mut new = base.clone();
    scale_job(&mut new, SMEM_PAD, 1.2);
    // The suite declared 25% for this job (the record carries it, in either run): 20% is noise.
    new.jobs
        .iter_mut()
        .find(|j| j.id() == SMEM_PAD)
        .unwrap()
        .noise_threshold_pct = Some(25.0);
    let c = check(&base, &new);
    assert!(verdicts(&c).is_empty(), "{:?}", verdicts(&c));
    let t = c
        .jobs
        .iter()
        .find(|j| j.id == SMEM_PAD)
        .unwrap()
        .timing
        .clone()
        .unwrap();
    assert_eq!(t.threshold, 0.25);
    // One below the command line's threshold changes nothing; nor does one no manifest could hold.
    for stored in [2.0, 500.0, -30.0, f64::NAN, f64::INFINITY] {
        new.jobs
            .iter_mut()
            .find(|j| j.id() == SMEM_PAD)
            .unwrap()
            .noise_threshold_pct = Some(stored);
        assert_eq!(
            verdicts(&check(&base, &new)),
            vec![(SMEM_PAD.to_string(), Verdict::Regressed)],
            "{stored}"
        );
    }
}

#[test]
fn one_job_twenty_percent_faster_improves() {
    let base = h200();
    let mut new = base.clone();
    scale_job(&mut new, SMEM_PAD, 1.0 / 1.2);
    let c = check(&base, &new);
    assert_eq!(
        verdicts(&c),
        vec![(SMEM_PAD.to_string(), Verdict::Improved)]
    );
    assert!(!c.regressed());
}

#[test]
fn a_counter_regression_is_caught_with_the_timing_unchanged() {
    let base = h200();
    let mut new = base.clone();
    new.profiles
        .get_mut(SMEM_PAD)
        .unwrap()
        .metrics
        .insert("shared_load_transactions_per_request".into(), Some(32.0));
    let c = check(&base, &new);
    assert_eq!(
        verdicts(&c),
        vec![(SMEM_PAD.to_string(), Verdict::Regressed)]
    );
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
        for s in [&mut j.nvml_before, &mut j.nvml_after]
            .into_iter()
            .flatten()
        {
            s.mem_clock_mhz = s.mem_clock_mhz.map(|m| m / 2);
        }
        j.samples_ms.iter_mut().for_each(|x| *x *= 3201.0 / 1600.0);
    }
    let c = check(&base, &new);
    assert!(verdicts(&c).is_empty(), "{:?}", verdicts(&c));
    assert!(
        c.notes.iter().any(|n| n.contains("memory clock differs")
            && n.contains("3201 → 1600")
            && n.contains("92 of them")),
        "{:?}",
        c.notes
    );
    let t = c.jobs[0].timing.as_ref().unwrap();
    assert_eq!(t.clocks.len(), 1);
    assert!(t.clocks[0].normalised && t.change.estimate.abs() < 1e-9);
    // Without normalisation the same data is a regression everywhere.
    let raw = compare(
        &base,
        "base",
        &new,
        "new",
        &defs(&base, &new),
        &Settings {
            normalize: Normalize::None,
            ..Settings::default()
        },
        true,
    );
    assert_eq!(raw.count(Verdict::Regressed), 92);
}

#[test]
fn correctness_decides_before_timing() {
    let base = h200();
    let mut new = base.clone();
    new.jobs[3].status = JobStatus::Wrong;
    let gone = new.jobs.remove(5);
    let mut extra = new.jobs[0].clone();
    extra.key.id = "brand_new @ NX=4000,NY=4000".into();
    let mut extra_wrong = extra.clone();
    extra_wrong.key.id = "brand_new_wrong @ NX=4000,NY=4000".into();
    extra_wrong.status = JobStatus::Failed;
    new.jobs.extend([extra, extra_wrong]);
    let c = check(&base, &new);
    let v = |id: &str| c.jobs.iter().find(|j| j.id == id).unwrap().verdict;
    assert_eq!(v(base.jobs[3].id()), Verdict::Regressed);
    assert_eq!(v(gone.id()), Verdict::Missing);
    assert_eq!(v("brand_new @ NX=4000,NY=4000"), Verdict::New);
    assert_eq!(v("brand_new_wrong @ NX=4000,NY=4000"), Verdict::Regressed);
    // Wrong in both runs is no news; wrong then correct is an improvement.
    let mut was_wrong = base.clone();
    was_wrong.jobs[3].status = JobStatus::Wrong;
    assert_eq!(
        check(&was_wrong, &new)
            .jobs
            .iter()
            .find(|j| j.id == base.jobs[3].id())
            .unwrap()
            .verdict,
        Verdict::Same
    );
    assert_eq!(
        check(&was_wrong, &base)
            .jobs
            .iter()
            .find(|j| j.id == base.jobs[3].id())
            .unwrap()
            .verdict,
        Verdict::Improved
    );
}

#[test]
fn across_gpu_models_the_share_of_the_copy_bound_is_compared() {
    let base = h200();
    let mut h100 = committed("20261122T042230Z-transpose-h100-80gb-hbm3");
    assert!(other_gpu(&base, &h100).is_some());
    let s = Settings {
        relative_to_copy: true,
        ..Settings::default()
    };
    scale_job(&mut h100, SMEM_PAD, 1.5);
    let c = compare(&base, "h200", &h100, "h100", &defs(&base, &h100), &s, true);
    assert!(
        c.notes[0].starts_with("different GPU models (NVIDIA H200 → NVIDIA H100 80GB HBM3)"),
        "{:?}",
        c.notes
    );
    assert!(
        c.jobs
            .iter()
            .all(|j| j.timing.as_ref().is_some_and(|t| t.clocks.is_empty()))
    );
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
    let md = exporter(Format::Md).render(&c).unwrap();
    let first_row = md
        .lines()
        .find(|l| l.starts_with("| **Regressed**") || l.starts_with("| Same"))
        .unwrap();
    assert!(
        first_row.contains("smem_pad_32") && first_row.contains("+20.0%"),
        "{first_row}"
    );
    assert!(md.contains("**REGRESSED: 1 of 92 jobs**"));
    let side = exporter(Format::Md)
        .render(&Comparison {
            verdicts: false,
            ..c.clone()
        })
        .unwrap();
    assert!(!side.contains("Regressed") && !side.contains("| Same"));
    let json: serde_json::Value =
        serde_json::from_str(&exporter(Format::Json).render(&c).unwrap()).unwrap();
    assert_eq!(json["regressed"], true);
    assert_eq!(json["counts"]["regressed"], 1);
    let plain = exporter(Format::Json)
        .render(&Comparison {
            verdicts: false,
            ..c
        })
        .unwrap();
    assert!(!plain.contains("\"verdict\""));
}

fn demo(name: &str) -> RunData {
    crate::store::load_run(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs")
            .join(name),
    )
    .unwrap()
    .0
}

#[test]
fn back_to_back_runs_of_unchanged_code_are_the_same_in_either_order() {
    // Two H100 runs two minutes apart (scripts/regression-demo.sh): transpose_fast @ 1024 x 2048,
    // a 5 µs kernel, drifted by 0.78 µs (-13.8%), past the old 0.5 µs floor in both orders.
    let (first, second) = (
        demo("20261122T053143Z-transpose-h100-80gb-hbm3"),
        demo("20261122T053344Z-transpose-h100-80gb-hbm3"),
    );
    for (base, new) in [(&first, &second), (&second, &first)] {
        let c = check(base, new);
        assert_eq!(c.count(Verdict::Same), 92, "{:?}", verdicts(&c));
        let drifted = c
            .jobs
            .iter()
            .find(|j| j.id == "transpose_fast[THREADS=512] @ NX=1024,NY=2048")
            .unwrap()
            .timing
            .clone()
            .unwrap();
        assert!(
            drifted.change.estimate.abs() > 0.12
                && drifted.change.estimate.abs() < drifted.threshold,
            "{drifted:?}"
        );
    }
    let old_floor = Settings {
        noise_floor_ms: 0.0005,
        ..Settings::default()
    };
    assert!(
        compare(
            &second,
            "b",
            &first,
            "a",
            &defs(&second, &first),
            &old_floor,
            true
        )
        .regressed()
    );
}

#[test]
fn a_metric_computed_by_another_formula_is_not_judged() {
    // The committed shared-memory run, as its predecessor (052451Z, commit 3c3957e) stored it:
    // shared_efficiency from bytes over 128-byte wavefronts, which read about half the new value.
    let new = committed("20261122T053910Z-shared-memory-h100-80gb-hbm3");
    let mut old = new.clone();
    let def = old
        .info
        .metrics
        .iter_mut()
        .find(|d| d.name == "shared_efficiency")
        .unwrap();
    def.counters = [
        ("bytes", "smsp__sass_data_bytes_mem_shared.sum"),
        (
            "wavefronts",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
        ),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into();
    def.formula = "100.0 * bytes / (128.0 * wavefronts)".into();
    for p in old.profiles.values_mut() {
        if let Some(Some(v)) = p.metrics.get_mut("shared_efficiency") {
            *v *= 0.48;
        }
    }
    for (base, new) in [(&old, &new), (&new, &old)] {
        let c = check(base, new);
        assert!(verdicts(&c).is_empty(), "{:?}", verdicts(&c));
        assert!(
            c.notes
                .iter()
                .any(|n| n.starts_with("definition changed between the runs")
                    && n.contains("shared_efficiency")),
            "{:?}",
            c.notes
        );
        let moved: Vec<&CounterChange> = c
            .jobs
            .iter()
            .flat_map(|j| &j.counters)
            .filter(|c| c.moved)
            .collect();
        assert!(
            !moved.is_empty()
                && moved
                    .iter()
                    .all(|c| c.metric == "shared_efficiency" && c.redefined && c.verdict.is_none())
        );
    }
    let md = exporter(Format::Md).render(&check(&old, &new)).unwrap();
    assert!(
        md.contains("definition changed between the runs: not judged"),
        "{md}"
    );
    // The tolerance is no part of the definition's identity: a run against itself has no note.
    assert!(check(&new, &new).notes.is_empty());
}

#[test]
fn an_unfinished_run_regresses_on_the_jobs_it_did_not_reach() {
    let base = h200();
    let mut killed = base.clone();
    killed.info.finished = None;
    killed.jobs.truncate(40);
    let c = check(&base, &killed);
    assert!(c.regressed());
    assert_eq!(
        (
            c.count(Verdict::Regressed),
            c.count(Verdict::Missing),
            c.count(Verdict::Same)
        ),
        (52, 0, 40)
    );
    assert!(
        c.notes[0].contains("this run did not finish"),
        "{:?}",
        c.notes
    );
    assert!(
        c.jobs
            .iter()
            .filter(|j| j.verdict == Verdict::Regressed)
            .all(|j| j.notes == ["not in this run, which did not finish"])
    );
    // A finished run that ran a subset (--variant) only misses the others.
    let mut subset = killed.clone();
    subset.info.finished = base.info.finished.clone();
    let c = check(&base, &subset);
    assert_eq!(
        (c.count(Verdict::Regressed), c.count(Verdict::Missing)),
        (0, 52)
    );
}

#[test]
fn what_could_not_be_compared_is_said() {
    let base = h200();
    let mut new = base.clone();
    let ids: Vec<String> = base.jobs.iter().take(4).map(|j| j.key.id.clone()).collect();
    new.jobs[0].samples_ms[0] = f64::NAN;
    new.profiles.remove(&ids[1]);
    let failed = new.profiles.get_mut(&ids[2]).unwrap();
    failed.metrics.clear();
    failed.error = Some("ncu: ==ERROR== Failed to profile kernel\nmore".into());
    new.profiles
        .get_mut(&ids[3])
        .unwrap()
        .metrics
        .remove("shared_load_transactions_per_request");
    let c = check(&base, &new);
    let notes = |id: &str| c.jobs.iter().find(|j| j.id == id).unwrap().notes.clone();
    assert_eq!(
        notes(&ids[0]),
        [
            "timing not compared: this run has a timing sample that is not a finite number for this job"
        ]
    );
    assert!(c.jobs[0].timing.is_none());
    assert_eq!(
        notes(&ids[1]),
        ["counters not compared: this run has no ncu profile of this job"]
    );
    assert_eq!(
        notes(&ids[2]),
        [
            "counters not compared: ncu measured nothing for this job in this run: ncu: ==ERROR== Failed to profile kernel"
        ]
    );
    assert_eq!(
        notes(&ids[3]),
        ["not measured in this run, so not compared: shared_load_transactions_per_request"]
    );
    assert!(c.jobs[4..].iter().all(|j| j.notes.is_empty()));
}

#[test]
fn shares_of_the_copy_bound_are_the_reports_own() {
    let run = h200();
    let c = check(&run, &run);
    for (j, cmp) in run.jobs.iter().zip(&c.jobs) {
        let t = cmp.timing.as_ref().unwrap();
        let report = 100.0 * j.gbs().unwrap() / run.bounds[j.group()].copy_gbs().unwrap();
        assert_eq!(
            (t.base_ms, t.base_pct_of_copy),
            (j.summary.unwrap().median, Some(report))
        );
    }
}
