//! A baseline as ReFrame performance references: per GPU model, each job's median time with the lower and upper bounds `check`'s noise threshold allows (pure).

use std::fmt::Write;

/// One job of the baseline: its id, median time in ms, and its suite's own noise threshold
/// (a fraction) where the suite sets one.
pub struct Reference<'a> {
    pub id: &'a str,
    pub median_ms: f64,
    pub own_threshold: Option<f64>,
}

/// The shortest median a reference may hold, in ms (1 ps): no GPU launch is shorter, and over
/// a smaller one (a denormal, from an edited baseline) the floor's share of the median is
/// infinite, which Python cannot read back (`inf` is a NameError).
pub const MIN_MEDIAN_MS: f64 = 1e-9;
/// The longest median a reference may hold, in ms (about 11.6 days: `--timeout` stops a job at one).
pub const MAX_MEDIAN_MS: f64 = 1e9;

/// A job left out of the references, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    pub id: String,
    pub reason: String,
}

/// The module, and the jobs it holds no reference for.
#[derive(Debug, Clone)]
pub struct Module {
    pub text: String,
    pub left_out: Vec<LeftOut>,
}

/// A job's median and bounds as the module prints them, or why it has none: every number
/// printed is finite, so the module always imports.
fn reference_numbers(job: &Reference, threshold: f64, floor_ms: f64) -> Result<(f64, f64), String> {
    let m = job.median_ms;
    if !(m.is_finite() && (MIN_MEDIAN_MS..=MAX_MEDIAN_MS).contains(&m)) {
        return Err(format!(
            "its median {m:e} ms is not a time a GPU measures ({MIN_MEDIAN_MS:e} to {MAX_MEDIAN_MS:e} ms)"
        ));
    }
    let own = job.own_threshold.unwrap_or(0.0);
    if !own.is_finite() {
        return Err(format!("its own noise threshold {own} is not a number"));
    }
    let t = super::timing::threshold(threshold.max(own), floor_ms, m);
    if !t.is_finite() {
        return Err(format!(
            "its bounds (a fraction {t} of the median) are not finite"
        ));
    }
    Ok((m, t))
}

/// A Python string literal.
fn py(text: &str) -> String {
    let mut out = String::from("'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A Python module defining `GPU_LAB_REFERENCES = {gpu model: {'suite/job': (median, -t, +t, 'ms')}}`,
/// the threshold t of each job as `check` computes it: the relative threshold (or the job's own
/// where that is more), or the absolute floor over the job's median where that is more. ReFrame thresholds are fractions of the value.
/// A job whose numbers could not be printed as finite Python floats is left out, with why.
pub fn references(
    name: &str,
    gpu: &str,
    suite: &str,
    jobs: &[Reference],
    threshold: f64,
    floor_ms: f64,
) -> Module {
    let mut left_out = Vec::new();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# gpu-lab baseline {} as ReFrame performance references (generated; do not edit).",
        py(name)
    );
    let _ = writeln!(
        out,
        "# Keys are GPU models: map each to your system:partition, e.g. reference = {{'cluster:h100': GPU_LAB_REFERENCES['NVIDIA H100 80GB HBM3']}}."
    );
    let _ = writeln!(
        out,
        "# Each value: (median time, lower, upper, unit), bounds as fractions of the median: gpu-lab's noise threshold of {:.1}% (or the suite's own, where it sets more) or {:.2} us, whichever is more.",
        threshold * 100.0,
        floor_ms * 1e3
    );
    let _ = writeln!(out, "GPU_LAB_REFERENCES = {{\n    {}: {{", py(gpu));
    for j in jobs {
        let (median, t) = match reference_numbers(j, threshold, floor_ms) {
            Ok(numbers) => numbers,
            Err(reason) => {
                left_out.push(LeftOut {
                    id: format!("{suite}/{}", j.id),
                    reason,
                });
                continue;
            }
        };
        let _ = writeln!(
            out,
            "        {}: ({:.6e}, {:.4}, {:.4}, 'ms'),",
            py(&format!("{suite}/{}", j.id)),
            median,
            -t,
            t
        );
    }
    out.push_str("    },\n}\n");
    Module {
        text: out,
        left_out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_carry_the_threshold_or_the_floor_and_escape_names() {
        let jobs = [
            Reference {
                id: "smem_pad_32 @ NX=8192",
                median_ms: 0.3,
                own_threshold: None,
            },
            Reference {
                id: "tiny's",
                median_ms: 0.005,
                own_threshold: None,
            },
            Reference {
                id: "failed",
                median_ms: f64::NAN,
                own_threshold: None,
            },
            Reference {
                id: "pageable",
                median_ms: 1.0,
                own_threshold: Some(0.2),
            },
        ];
        let module = references(
            "h100",
            "NVIDIA H100 80GB HBM3",
            "transpose",
            &jobs,
            0.07,
            0.001,
        );
        let text = module.text;
        assert_eq!(module.left_out.len(), 1, "the job without a time");
        assert!(text.contains("'NVIDIA H100 80GB HBM3': {"), "{text}");
        assert!(
            text.contains(
                "'transpose/smem_pad_32 @ NX=8192': (3.000000e-1, -0.0700, 0.0700, 'ms'),"
            ),
            "{text}"
        );
        // 1 us over a 5 us kernel is 20%, more than 7%.
        assert!(
            text.contains("'transpose/tiny\\'s': (5.000000e-3, -0.2000, 0.2000, 'ms'),"),
            "{text}"
        );
        assert!(
            !text.contains("failed"),
            "a job without a time has no reference"
        );
        assert!(
            text.contains("'transpose/pageable': (1.000000e0, -0.2000, 0.2000, 'ms'),"),
            "a suite's own threshold widens the bounds: {text}"
        );
    }

    fn one(median_ms: f64, own_threshold: Option<f64>) -> Module {
        let jobs = [Reference {
            id: "j",
            median_ms,
            own_threshold,
        }];
        references("b", "GPU", "s", &jobs, 0.07, 0.001)
    }

    #[test]
    fn a_denormal_median_gets_no_reference_and_the_module_holds_no_inf() {
        for median in [
            1e-320,
            5e-324,
            1e-300,
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            1e300,
        ] {
            let module = one(median, None);
            assert!(
                !module.text.contains("'s/j'"),
                "{median:e}: {}",
                module.text
            );
            assert!(!module.text.contains("inf") && !module.text.contains("NaN"));
            assert_eq!(module.left_out.len(), 1, "{median:e}");
            assert!(
                module.left_out[0]
                    .reason
                    .contains("not a time a GPU measures"),
                "{:?}",
                module.left_out
            );
        }
    }

    #[test]
    fn a_median_at_either_end_of_the_range_prints_finite_bounds() {
        for median in [MIN_MEDIAN_MS, MAX_MEDIAN_MS] {
            let module = one(median, None);
            assert!(module.left_out.is_empty(), "{median:e}");
            let line = module.text.lines().find(|l| l.contains("'s/j'")).unwrap();
            let numbers = line
                .split_once('(')
                .and_then(|(_, rest)| rest.split_once(", 'ms')"))
                .unwrap()
                .0;
            for n in numbers.split(", ") {
                assert!(n.parse::<f64>().unwrap().is_finite(), "{line}");
            }
        }
    }

    #[test]
    fn a_stored_threshold_that_is_not_a_number_leaves_the_job_out() {
        let module = one(1.0, Some(f64::INFINITY));
        assert_eq!(module.left_out.len(), 1);
        assert!(module.left_out[0].reason.contains("own noise threshold"));
        assert!(one(1.0, Some(f64::NAN)).left_out.len() == 1);
    }
}
