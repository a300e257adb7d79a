//! A baseline as ReFrame performance references: per GPU model, each job's median time with the lower and upper bounds `check`'s noise threshold allows (pure).

use std::fmt::Write;

/// One job of the baseline: its id, median time in ms, and its suite's own noise threshold
/// (a fraction) where the suite sets one.
pub struct Reference<'a> {
    pub id: &'a str,
    pub median_ms: f64,
    pub own_threshold: Option<f64>,
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
pub fn references(
    name: &str,
    gpu: &str,
    suite: &str,
    jobs: &[Reference],
    threshold: f64,
    floor_ms: f64,
) -> String {
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
    for j in jobs
        .iter()
        .filter(|j| j.median_ms.is_finite() && j.median_ms > 0.0)
    {
        let t = super::timing::threshold(
            threshold.max(j.own_threshold.unwrap_or(0.0)),
            floor_ms,
            j.median_ms,
        );
        let _ = writeln!(
            out,
            "        {}: ({:.6e}, {:.4}, {:.4}, 'ms'),",
            py(&format!("{suite}/{}", j.id)),
            j.median_ms,
            -t,
            t
        );
    }
    out.push_str("    },\n}\n");
    out
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
        let text = references(
            "h100",
            "NVIDIA H100 80GB HBM3",
            "transpose",
            &jobs,
            0.07,
            0.001,
        );
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
}
