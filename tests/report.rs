//! The markdown report of the committed H100 run, as a snapshot: any change to rendering shows up in review.

#[test]
fn markdown_report_of_the_committed_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs/20261122T044759Z-transpose-h200");
    let (run, warnings) = gpu_lab::store::load_run(&dir).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md).render(&run).unwrap();
    // The report must show what the seeds teach.
    assert!(md.contains("| `smem_32`"));
    insta::assert_snapshot!(md);
}

#[test]
fn truncated_results_keep_every_complete_record() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs/20261122T044759Z-transpose-h200");
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(src.join("run.json"), d.path().join("run.json")).unwrap();
    let body = std::fs::read_to_string(src.join("results.jsonl")).unwrap();
    // A run killed mid-write: the last line is cut in half.
    let cut = &body[..body.len() - 200];
    std::fs::write(d.path().join("results.jsonl"), cut).unwrap();
    let (run, warnings) = gpu_lab::store::load_run(d.path()).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(run.jobs.len() >= 90);
}

#[test]
fn svg_chart_has_a_bar_per_correct_job_and_a_copy_line_per_group() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs/20261122T044759Z-transpose-h200");
    let (run, _) = gpu_lab::store::load_run(&dir).unwrap();
    let svg = gpu_lab::report::exporter(gpu_lab::report::Format::Svg).render(&run).unwrap();
    assert!(svg.starts_with("<svg"));
    // One background rectangle plus one bar per correct job (92 here).
    assert_eq!(svg.matches("<rect").count(), 1 + 92);
    assert_eq!(svg.matches("\ncopy ").count(), 4, "one copy-bound label per group");
    assert!(svg.contains("transpose_fast[THREADS=512]"));
}
