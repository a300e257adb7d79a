//! Tests of the compute ladder judged by math: each math's roof named, the roof column, a roof not
//! measured, integer units; on hand-built records (in their own file: they render the whole report,
//! which imports `roofs`).

use crate::records::fixtures::{job, run};
use crate::records::{JobRecord, Math, RunData};
use crate::report::exporter::Exporter;
use crate::report::markdown::Markdown;

fn report(jobs: Vec<JobRecord>) -> (RunData, String) {
    let run = run(jobs);
    let md = Markdown.render(&run).unwrap();
    (run, md)
}

/// The ladder's row whose first cell is `first` (`variant` for the header), cells trimmed.
fn row(md: &str, first: &str) -> Vec<String> {
    let line = md
        .lines()
        .find(|l| l.starts_with(&format!("| {first} ")))
        .unwrap_or_else(|| panic!("no row {first} in\n{md}"));
    line.split('|').map(|c| c.trim().to_string()).collect()
}

#[test]
fn the_ladder_names_each_maths_roof_and_ranks_a_tensor_job_against_it() {
    let (_, md) = report(vec![
        job("simt", None, 0.05),
        job("bf16", Some(Math::Bf16Tensor), 0.5),
    ]);
    assert!(
        md.contains("FP32 peak: 132 SMs × 128 lanes × 2 × 1980 MHz"),
        "{md}"
    );
    assert!(
        md.contains("BF16 tensor (f32 accumulate) roof: **750.0 TFLOP/s**, the fastest measured in this run: mma.sync peak kernel (MOCK) (gpu-lab kernel), SM clock 1755 MHz. Also measured: cuBLASLt 8192³ (MOCK) (library): 700.0 TFLOP/s."),
        "{md}"
    );
    // Two maths: a math column, and the roof column names whose roof.
    let head = row(&md, "variant");
    assert_eq!(head[2], "math");
    assert_eq!(head[5], "% of its math's roof");
    let bf16 = row(&md, "`bf16`");
    assert_eq!(bf16[2], "`bf16-tensor`");
    assert!(bf16.contains(&"67%".to_string()), "{bf16:?}");
    assert!(!md.contains("IMPOSSIBLE"), "{md}");
    assert!(
        md.contains("% of its math's roof = over the roof of the math"),
        "{md}"
    );
}

#[test]
fn one_math_names_its_roof_in_the_header_and_integers_count_ops() {
    let (_, md) = report(vec![job("i8", Some(Math::I8Tensor), 0.75)]);
    let head = row(&md, "variant");
    assert_eq!(
        head[3..5],
        ["GOP/s", "% of INT8 tensor (i32 accumulate) roof"]
    );
    assert!(
        md.contains("INT8 tensor (i32 accumulate) roof: **1500.0 TOP/s**"),
        "{md}"
    );
    assert!(
        !md.contains("FP32 peak:"),
        "no FP32 job, no FP32 peak line: {md}"
    );
    assert!(row(&md, "`i8`").contains(&"50%".to_string()));
}

#[test]
fn a_math_whose_roof_was_not_measured_says_so_and_is_not_judged_by_fp32() {
    let (run, md) = report(vec![job("fp8", Some(Math::E4m3Tensor), 5.0)]);
    assert!(
        md.contains("FP8 E4M3 tensor (f32 accumulate) roof: not measured in this run (cuBLASLt 8192³ (MOCK): MOCK: no FP8)"),
        "{md}"
    );
    let cells = row(&md, "`fp8`");
    assert!(
        cells.contains(&"roof not measured".to_string()),
        "{cells:?}"
    );
    assert!(!md.contains("IMPOSSIBLE"), "{md}");
    assert!(run.impossible(&run.jobs[0]).is_none());
}

#[test]
fn the_same_job_declared_fp32_is_impossible() {
    let (_, md) = report(vec![job("fp32", Some(Math::Fp32), 0.5)]);
    assert!(md.contains("**IMPOSSIBLE**"), "{md}");
    assert!(md.contains("% of FP32 peak"), "{md}");
}
