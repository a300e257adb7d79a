//! CUPTI Activity kernel durations on the command line where there is no GPU: `--no-activity` leaves them out, a mock run says why it has none, and `profile` keeps the profiler's duration with that reason.

use crate::common::{mock_gpu_lab_in, mock_run_in, results_text, stdout};

fn job_lines(results: &str) -> Vec<serde_json::Value> {
    results
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "job")
        .collect()
}

#[test]
fn a_mock_run_records_why_it_has_no_activity_and_no_activity_records_none() {
    let d = tempfile::tempdir().unwrap();
    let on = mock_run_in(d.path(), ["--suite", "reduction"]);
    let jobs = job_lines(&results_text(&on));
    assert!(!jobs.is_empty());
    for j in &jobs {
        let why = j["activity"]["error"].as_str().unwrap_or_default();
        assert!(why.starts_with("MOCK"), "{j}");
        assert!(j["activity"].get("summary").is_none(), "{j}");
    }
    let report = std::fs::read_to_string(on.join("report.md")).unwrap();
    assert!(report.contains("No activity durations for"), "{report}");
    let d = tempfile::tempdir().unwrap();
    let off = mock_run_in(d.path(), ["--suite", "reduction", "--no-activity"]);
    for j in job_lines(&results_text(&off)) {
        assert!(j.get("activity").is_none(), "{j}");
    }
}

#[test]
fn a_mock_profile_keeps_the_profilers_duration_and_says_why() {
    let d = tempfile::tempdir().unwrap();
    let out = mock_gpu_lab_in(d.path())
        .args(["profile", "--suite", "reduction", "--duration-runs", "0"])
        .args(["--out", "runs", "--quiet"])
        .assert()
        .code(0);
    let run = d.path().join(stdout(&out).trim());
    let results = results_text(&run);
    let froms: Vec<String> = results
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "profile" && v["metrics"].get("duration").is_some())
        .map(|v| v["duration_from"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(!froms.is_empty(), "{results}");
    for from in froms {
        assert!(
            from.contains("no activity durations from the timing child: MOCK"),
            "{from}"
        );
    }
}
