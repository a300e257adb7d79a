//! History rows of the committed H200 run and of copies of it with other run ids, start times and scaled samples (the scalings are test data, not measurements): their measures, the Parquet round trip, trends, the last K runs and the baseline made of them (that a check against it catches a slowdown is tested through the command, in tests/integration/history.rs: `compare` is not imported here, it imports `report`, which imports this module).

use std::path::Path;

use super::*;
use crate::records::{JobStatus, RunData};

pub(crate) fn h200() -> RunData {
    // Read here rather than through `store`, which imports this module.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/20261122T044759Z-transpose-h200");
    let info =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    // Stored gzipped, as the committed runs are.
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(
            std::fs::File::open(dir.join("results.jsonl.gz")).unwrap(),
        ),
        &mut text,
    )
    .unwrap();
    let records = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    RunData::from_records(info, records)
}

/// The H200 run as if started at `started`, its times scaled by `factor`.
fn copy(started: &str, factor: f64) -> RunData {
    let mut run = h200();
    run.info.started = started.into();
    for j in &mut run.jobs {
        for s in &mut j.samples_ms {
            *s *= factor;
        }
        j.summary = crate::stats::summarize(&j.samples_ms);
    }
    run
}

/// Three runs' rows, the second 10% slower and the third 20%, run ids `r1` to `r3`.
pub(crate) fn three_runs() -> Vec<HistoryRow> {
    [
        ("r1", "2026-11-20T10:00:00Z", 1.0),
        ("r2", "2026-11-21T10:00:00Z", 1.1),
        ("r3", "2026-11-22T10:00:00Z", 1.2),
    ]
    .into_iter()
    .flat_map(|(id, at, f)| rows_of(id, &copy(at, f)))
    .collect()
}

#[test]
fn every_correct_job_gives_its_time_and_rates_with_the_interval_turned_for_a_rate() {
    let run = h200();
    let rows = rows_of("r", &run);
    let ok = run
        .jobs
        .iter()
        .filter(|j| j.status == JobStatus::Ok && j.summary.is_some())
        .count();
    assert!(ok > 0);
    let times: Vec<&HistoryRow> = rows
        .iter()
        .filter(|r| r.measure == Measure::TimeMs)
        .collect();
    assert_eq!(times.len(), ok);
    let job = run
        .jobs
        .iter()
        .find(|j| j.key.id == times[0].job_id)
        .unwrap();
    let s = job.summary.unwrap();
    assert_eq!(
        (times[0].median, times[0].ci_low, times[0].ci_high),
        (s.median, s.ci_low, s.ci_high)
    );
    assert_eq!(times[0].samples, job.samples_ms);
    let rate = rows
        .iter()
        .find(|r| r.measure == Measure::Gbs && r.job_id == job.key.id)
        .expect("the transpose jobs declare bytes");
    let bytes = job.work.bytes.unwrap();
    assert!((rate.median - bytes / s.median / 1e6).abs() < 1e-9 * rate.median);
    assert!(rate.ci_low <= rate.median && rate.median <= rate.ci_high);
    assert!((rate.ci_low - bytes / s.ci_high / 1e6).abs() < 1e-9 * rate.median);
    // Provenance and fingerprint on every row.
    assert!(
        rows.iter()
            .all(|r| r.fingerprint == EnvFingerprint::of(&run).key() && r.gpu.contains("H200"))
    );
}

#[test]
fn the_fingerprint_is_the_environment_not_the_commit_nor_the_time() {
    let a = h200();
    let mut b = copy("2030-01-01T00:00:00Z", 2.0);
    if let Some(build) = b.info.build.as_mut() {
        build.commit = Some("another".into());
    }
    assert_eq!(EnvFingerprint::of(&a).key(), EnvFingerprint::of(&b).key());
    b.info.timing.cache = match a.info.timing.cache {
        crate::records::CacheState::Cold => crate::records::CacheState::Warm,
        crate::records::CacheState::Warm => crate::records::CacheState::Cold,
    };
    assert_ne!(EnvFingerprint::of(&a).key(), EnvFingerprint::of(&b).key());
    let mut m = h200();
    m.info.mock = true;
    assert_ne!(EnvFingerprint::of(&a).key(), EnvFingerprint::of(&m).key());
    assert_eq!(EnvFingerprint::of(&a).key().len(), 16);
}

#[test]
fn rows_survive_the_parquet_round_trip() {
    let mut rows = rows_of("r1", &h200());
    rows[0].commit = None;
    rows[1].samples.clear();
    let bytes = frame::to_parquet(&rows).unwrap();
    assert_eq!(frame::from_parquet(&bytes).unwrap(), rows);
    assert_eq!(
        frame::from_parquet(&frame::to_parquet(&[]).unwrap()).unwrap(),
        []
    );
    assert!(frame::from_parquet(b"PAR1 not parquet").is_err());
}

#[test]
fn three_runs_make_a_trend_per_job_in_run_order() {
    let rows = three_runs();
    let key = rows[0].fingerprint.clone();
    let t = trends(
        &rows,
        &Selection {
            fingerprint: &key,
            measure: Measure::TimeMs,
            variants: &[],
            since: None,
        },
    );
    assert_eq!(t.runs, ["r1", "r2", "r3"]);
    assert!(!t.trends.is_empty());
    for trend in &t.trends {
        let ids: Vec<&str> = trend.points.iter().map(|p| p.run_id.as_str()).collect();
        assert_eq!(ids, ["r1", "r2", "r3"]);
        let last = trend.points.last().unwrap();
        assert!((trend.change_pct(last).unwrap() - 20.0).abs() < 1e-6);
    }
    // --since and --variant narrow it; another fingerprint is not in it.
    let variant = vec![t.trends[0].label.split('[').next().unwrap().to_string()];
    let narrow = trends(
        &rows,
        &Selection {
            fingerprint: &key,
            measure: Measure::TimeMs,
            variants: &variant,
            since: Some("2026-11-21"),
        },
    );
    assert_eq!(narrow.runs, ["r2", "r3"]);
    assert!(
        narrow.trends.len() < t.trends.len()
            || t.trends.iter().all(|x| x.label.starts_with(&variant[0]))
    );
    let none = trends(
        &rows,
        &Selection {
            fingerprint: "0000000000000000",
            measure: Measure::TimeMs,
            variants: &[],
            since: None,
        },
    );
    assert!(none.runs.is_empty() && none.trends.is_empty());
    assert_eq!(
        fingerprints(&rows),
        [(key, EnvFingerprint::of_row(&rows[0]).describe(), 3)]
    );
}

#[test]
fn the_last_k_runs_leave_out_the_run_judged() {
    let rows = three_runs();
    let key = rows[0].fingerprint.clone();
    assert_eq!(last_runs(&rows, &key, 2, "r3"), ["r1", "r2"]);
    assert_eq!(last_runs(&rows, &key, 2, "new"), ["r2", "r3"]);
    assert_eq!(last_runs(&rows, &key, 9, "new"), ["r1", "r2", "r3"]);
    assert!(last_runs(&rows, "other", 2, "new").is_empty());
}

#[test]
fn a_baseline_of_the_last_runs_pools_their_medians() {
    let rows = three_runs();
    let runs = vec!["r1".to_string(), "r2".into(), "r3".into()];
    let new = copy("2026-11-23T10:00:00Z", 1.1);
    let base = baseline_run(&rows, &runs, &new);
    let job = &base.jobs[0];
    let medians: Vec<f64> = rows
        .iter()
        .filter(|r| r.measure == Measure::TimeMs && r.job_id == job.key.id)
        .map(|r| r.median)
        .collect();
    assert_eq!(job.samples_ms, medians, "one sample per run: its median");
    assert_eq!(job.summary.unwrap().n, 3);
    // Every job of the runs is in it, shaped like the run judged.
    assert_eq!(
        base.jobs.len(),
        new.jobs
            .iter()
            .filter(|j| j.status == JobStatus::Ok && j.summary.is_some())
            .count()
    );
    assert!(
        base.jobs
            .iter()
            .all(|j| j.status == JobStatus::Ok && j.summary.is_some())
    );
    assert_eq!(base.info.suite, new.info.suite);
    assert!(
        base.info.command.contains("r1, r2, r3"),
        "{}",
        base.info.command
    );
    // One run: its own samples stand.
    let one = baseline_run(&rows, &runs[..1], &new);
    assert_eq!(
        one.jobs[0].samples_ms,
        rows.iter()
            .find(|r| r.run_id == "r1"
                && r.job_id == one.jobs[0].key.id
                && r.measure == Measure::TimeMs)
            .unwrap()
            .samples
    );
}
