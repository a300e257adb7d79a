//! The markdown report's power and energy: a job's samples read under a clock-lowering reason (power cap, thermal) as a reading and a header row, never silent; and, for `--energy`, a table per group of joules per run, watts, J/TFLOP or J/GB, the power limit and state and the reasons seen.

use std::fmt::Write;

use super::cells::table;
use crate::records::{
    EnergyRecord, JobRecord, RunData, clock_event_lowers_clock, clock_event_words,
};

/// The clock-lowering reasons NVML read after a job's samples, in words with their counts
/// (`power cap in 12`); empty where there were none.
fn lowering_reasons(j: &JobRecord) -> Vec<String> {
    j.sample_clock_events
        .iter()
        .filter(|(name, _)| clock_event_lowers_clock(name))
        .map(|(name, n)| format!("{} in {n}", clock_event_words(name)))
        .collect()
}

/// A job's samples read while the clock was lowered, as a reading: kept (every sample was, so
/// the time is the lowered GPU's) or left out. None where no sample was.
pub(super) fn clock_reading(j: &JobRecord) -> Option<String> {
    let reasons = lowering_reasons(j);
    if reasons.is_empty() {
        return None;
    }
    let taken = j.samples_ms.len() + j.excluded_samples.len();
    let reasons = reasons.join(", ");
    Some(if j.clock_lowered_kept > 0 {
        format!(
            "- `{}`: **clock lowered while timing** ({reasons} of {taken} samples): every sample was, so they stay in the median — this time is the power-capped or slowed GPU's, not its full clock's",
            j.label
        )
    } else {
        format!(
            "- `{}`: clock lowered after some samples ({reasons} of {taken}); those samples are left out of the median",
            j.label
        )
    })
}

/// A header row naming the jobs timed under a clock-lowering reason; None where none was.
pub(super) fn header_row(run: &RunData) -> Option<(String, String)> {
    let lowered: Vec<&JobRecord> = run
        .jobs
        .iter()
        .filter(|j| !lowering_reasons(j).is_empty())
        .collect();
    if lowered.is_empty() {
        return None;
    }
    let kept: Vec<&str> = lowered
        .iter()
        .filter(|j| j.clock_lowered_kept > 0)
        .map(|j| j.label.as_str())
        .collect();
    let kept = match kept.as_slice() {
        [] => String::new(),
        labels => format!(
            "; **timed while lowered** (every sample): {}",
            labels.join(", ")
        ),
    };
    Some((
        "clock lowered (NVML after each sample)".into(),
        format!(
            "{} jobs had samples under the power cap or a slowdown{kept}",
            lowered.len()
        ),
    ))
}

/// The `--energy` table of a group's jobs; nothing where none was measured.
pub(super) fn section(jobs: &[&JobRecord], out: &mut String) {
    let measured: Vec<(&JobRecord, &EnergyRecord)> = jobs
        .iter()
        .filter_map(|j| j.energy.as_ref().map(|e| (*j, e)))
        .collect();
    if measured.is_empty() {
        return;
    }
    let mut rows = vec![
        [
            "variant",
            "J/run",
            "W",
            "J/TFLOP",
            "J/GB",
            "runs in s",
            "power limit, state",
            "SM clock",
            "clock events",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let mut notes = Vec::new();
    for (j, e) in &measured {
        if let Some(why) = &e.error {
            notes.push(format!("- `{}`: energy not measured: {why}", j.label));
        }
        rows.push(row(j, e));
    }
    let _ = writeln!(out, "Energy (`--energy`):\n\n{}\n", table(rows));
    if measured.iter().any(|(_, e)| e.mock) {
        out.push_str("MOCK: the energy above is a stand-in; nothing ran.\n\n");
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "{}\n", notes.join("\n"));
    }
}

fn row(j: &JobRecord, e: &EnergyRecord) -> Vec<String> {
    let num =
        |v: Option<f64>, digits: usize| v.map_or("–".to_string(), |x| format!("{x:.digits$}"));
    let per_run = e.joules_per_run();
    let per_run_cell = match per_run {
        Some(j) if j < 0.01 => format!("{:.3} mJ", j * 1e3),
        Some(j) => format!("{j:.4}"),
        None => "–".into(),
    };
    let events = e.clock_events.names();
    let events = if events.is_empty() {
        "none".to_string()
    } else {
        let words: Vec<&str> = events.iter().map(|n| clock_event_words(n)).collect();
        let lowered = if e.clock_lowered() {
            format!(
                "**lowered** at {} of {} steps: ",
                e.clock_lowered_steps,
                e.counter_steps + 1
            )
        } else {
            String::new()
        };
        format!("{lowered}{}", words.join(", "))
    };
    vec![
        format!("{}{}", j.label, if e.mock { " (MOCK)" } else { "" }),
        per_run_cell,
        num(e.mean_watts(), 0),
        num(e.joules_per_tera_op(j.work.flops), 2),
        num(e.joules_per_gb(j.work.bytes), 3),
        match e.error {
            None => format!("{} in {:.2}", e.runs, e.seconds),
            Some(_) => "–".into(),
        },
        format!(
            "{}, {}",
            e.power_limit_w.map_or("–".into(), |w| format!("{w:.0} W")),
            e.power_state.as_deref().unwrap_or("–")
        ),
        e.sm_clock_mhz.map_or("–".into(), |[lo, hi]| {
            if lo == hi {
                format!("{lo} MHz")
            } else {
                format!("{lo}–{hi} MHz")
            }
        }),
        events,
    ]
}

/// The energy table's legend, where a job has energy.
pub(super) fn legend(run: &RunData, out: &mut String) {
    if run.jobs.iter().any(|j| j.energy.is_some()) {
        out.push_str("Legend of the energy tables (`--energy`): after timing, each job's launches ran back to back (L2 warm) for at least a second while NVML's total-energy counter was read after every batch of about 10 ms; the window opens and closes at the counter's steps (about 100 ms apart), so J/run = the counter's change over the window over the runs completed in it, and W = that change over the window's time (the whole GPU's power, idle parts included); J/TFLOP = J/run over the declared flops in 10¹², J/GB = over the declared bytes in 10⁹; power limit = the limit the driver enforced, state = the performance state at the end; clock events = the reasons NVML gave at the counter's steps, **lowered** where one of them (power cap, thermal or hardware slowdown, power brake) lowered the SM clock.\n\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::ClockEvents;

    fn job(label: &str) -> JobRecord {
        JobRecord {
            label: label.into(),
            samples_ms: vec![1.0; 8],
            ..Default::default()
        }
    }

    #[test]
    fn a_power_capped_job_is_never_silent() {
        let mut j = job("bf16-gemm");
        assert_eq!(clock_reading(&j), None);
        j.sample_clock_events.insert("GPU_IDLE".into(), 3);
        assert_eq!(clock_reading(&j), None, "idle does not lower the clock");
        j.sample_clock_events.insert("SW_POWER_CAP".into(), 8);
        j.clock_lowered_kept = 8;
        let r = clock_reading(&j).unwrap();
        assert!(
            r.contains("**clock lowered while timing** (power cap in 8 of 8 samples)"),
            "{r}"
        );
        let run = RunData {
            jobs: vec![j, job("copy")],
            ..Default::default()
        };
        let (k, v) = header_row(&run).unwrap();
        assert!(k.contains("clock lowered"));
        assert!(v.contains("1 jobs") && v.contains("bf16-gemm"), "{v}");
    }

    #[test]
    fn the_energy_table_gives_joules_per_tflop_and_the_power_state() {
        let mut j = job("mma");
        j.work.flops = Some(2.0 * 4096f64.powi(3));
        j.energy = Some(EnergyRecord {
            runs: 1000,
            seconds: 1.0,
            joules: 690.0,
            counter_steps: 10,
            power_limit_w: Some(700.0),
            power_state: Some("P0".into()),
            sm_clock_mhz: Some([1410, 1530]),
            clock_events: ClockEvents::from_names(&["SW_POWER_CAP"]).unwrap(),
            clock_lowered_steps: 11,
            method: "back to back".into(),
            ..Default::default()
        });
        let mut failed = job("host");
        failed.energy = Some(EnergyRecord::failed("no counter"));
        let mut out = String::new();
        section(&[&j, &failed], &mut out);
        assert!(out.contains("| mma "), "{out}");
        assert!(out.contains("| 0.6900 "), "{out}");
        assert!(out.contains("| 690 "), "{out}");
        assert!(out.contains("| 5.02 "), "J/TFLOP: 0.69 / 0.1374: {out}");
        assert!(
            out.contains("700 W, P0") && out.contains("1410–1530 MHz"),
            "{out}"
        );
        assert!(
            out.contains("**lowered** at 11 of 11 steps: power cap"),
            "{out}"
        );
        assert!(
            out.contains("`host`: energy not measured: no counter"),
            "{out}"
        );
        assert!(!out.contains("MOCK"));
    }
}
