//! `profile --profiler both` (issue 31, item 3): every counter of every launch and every metric of every job, CUPTI's against ncu's from the same pass, the largest relative differences first (pure).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::parse::KernelRow;
use crate::records::ProfileRecord;

/// What is compared: a raw counter of one launch, or a metric of one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Counter,
    Metric,
}

/// One value both profilers gave (or one of them did not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub kind: Kind,
    /// The job, and for a counter the launch (`#0` the job's first kernel).
    pub job: String,
    pub name: String,
    /// None where this profiler gave no number.
    pub cupti: Option<f64>,
    pub ncu: Option<f64>,
    /// |CUPTI − ncu| / max(|CUPTI|, |ncu|); 0 where both are 0 or both missing, 1 where one is.
    pub relative: f64,
    /// For a counter, half a unit of the last digit ncu printed it with (its CSV rounds
    /// percentages and ratios to two decimals), in base units; for a metric, that rounding of its
    /// counters carried through its formula; None where not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncu_resolution: Option<f64>,
}

impl Difference {
    /// Equal, or apart by no more than ncu's printed rounding: as equal as ncu's page can say.
    pub fn equal_as_printed(&self) -> bool {
        if self.relative == 0.0 {
            return true;
        }
        match (self.cupti, self.ncu, self.ncu_resolution) {
            // A relative slack of 1e-12 absorbs the base-unit scaling of the printed value.
            (Some(c), Some(n), Some(r)) => (c - n).abs() <= r * (1.0 + 1e-12),
            _ => false,
        }
    }
}

/// ncu's printed rounding of one job's values, in base units: each counter's from its page
/// (`parse::resolution`), each metric's propagated from its counters' (`executor::cupti`).
#[derive(Debug, Clone, PartialEq)]
pub struct PrintedRounding<'a> {
    /// The page's, shared by every job of the pass.
    pub counters: &'a BTreeMap<String, f64>,
    pub metrics: BTreeMap<String, f64>,
}

impl Default for PrintedRounding<'_> {
    /// No rounding known: values compare exactly.
    fn default() -> Self {
        static NONE: BTreeMap<String, f64> = BTreeMap::new();
        PrintedRounding {
            counters: &NONE,
            metrics: BTreeMap::new(),
        }
    }
}

/// How many values of one kind agree, and how closely.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub all: usize,
    pub equal: usize,
    /// Equal, or within ncu's printed rounding (`Difference::equal_as_printed`).
    pub equal_as_printed: usize,
    /// Within 1%, or within ncu's printed rounding.
    pub within: usize,
}

/// Every comparison of one or more passes, the largest differences first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Crosscheck {
    pub differences: Vec<Difference>,
    /// Jobs one profiler could not do, with why.
    pub unmatched: Vec<String>,
}

/// The relative difference of two values; 1 (all of it) where only one is missing or not a number.
pub fn relative(cupti: Option<f64>, ncu: Option<f64>) -> f64 {
    match (cupti, ncu) {
        (Some(c), Some(n)) if c.is_finite() && n.is_finite() => {
            let scale = c.abs().max(n.abs());
            if scale == 0.0 {
                0.0
            } else {
                (c - n).abs() / scale
            }
        }
        (Some(c), Some(n)) if c.is_nan() && n.is_nan() => 0.0,
        // Neither has a number (a ratio undefined for both, as no shared loads at all): agreed.
        (None, None) => 0.0,
        _ => 1.0,
    }
}

fn difference(kind: Kind, job: String, name: &str, c: Option<f64>, n: Option<f64>) -> Difference {
    Difference {
        kind,
        job,
        name: name.to_string(),
        cupti: c,
        ncu: n,
        relative: relative(c, n),
        ncu_resolution: None,
    }
}

impl Crosscheck {
    /// Adds one job: its launches' rows from each profiler (in launch order) and its records;
    /// `rounding` is ncu's printed rounding of the job's counters and metrics.
    /// Counters only one side has (ncu's own, such as `profiler__replayer_passes`) are left out:
    /// only counters both were asked for are compared.
    pub fn add_job(
        &mut self,
        counters: &[String],
        rounding: &PrintedRounding,
        rows: (&[KernelRow], &[KernelRow]),
        records: (&ProfileRecord, &ProfileRecord),
    ) {
        let job = &records.0.job_id;
        let (cupti_rows, ncu_rows) = rows;
        if cupti_rows.len() != ncu_rows.len() {
            self.unmatched.push(format!(
                "{job}: CUPTI gave {} kernels, ncu {}",
                cupti_rows.len(),
                ncu_rows.len()
            ));
        }
        for (i, (c, n)) in cupti_rows.iter().zip(ncu_rows).enumerate() {
            for counter in counters {
                self.differences.push(Difference {
                    ncu_resolution: rounding.counters.get(counter).copied(),
                    ..difference(
                        Kind::Counter,
                        format!("{job} #{i}"),
                        counter,
                        c.values.get(counter).copied(),
                        n.values.get(counter).copied(),
                    )
                });
            }
        }
        let (c, n) = records;
        let names: BTreeMap<&String, ()> = c
            .metrics
            .keys()
            .chain(n.metrics.keys())
            .map(|k| (k, ()))
            .collect();
        for name in names.keys() {
            let get = |r: &ProfileRecord| r.metrics.get(*name).copied().flatten();
            self.differences.push(Difference {
                ncu_resolution: rounding.metrics.get(*name).copied(),
                ..difference(Kind::Metric, job.clone(), name, get(c), get(n))
            });
        }
    }

    /// Notes a job that one profiler could not do.
    pub fn add_unmatched(&mut self, job: &str, why: &str) {
        self.unmatched.push(format!("{job}: {why}"));
    }

    /// Appends another pass's comparison.
    pub fn extend(&mut self, other: Crosscheck) {
        self.differences.extend(other.differences);
        self.unmatched.extend(other.unmatched);
    }

    /// The largest differences first, those equal as ncu printed them after the rest (a 100%
    /// difference of 2e-6 against a printed 0.00 is none); ties by kind, job and name, so the
    /// order is reproducible.
    pub fn sort(&mut self) {
        self.differences.sort_by(|a, b| {
            a.equal_as_printed()
                .cmp(&b.equal_as_printed())
                .then_with(|| b.relative.total_cmp(&a.relative))
                .then_with(|| (a.kind as u8).cmp(&(b.kind as u8)))
                .then_with(|| a.job.cmp(&b.job))
                .then_with(|| a.name.cmp(&b.name))
        });
    }

    /// How many values of `kind` were compared, and how many agree how closely.
    pub fn tally(&self, kind: Kind) -> Tally {
        let mut t = Tally::default();
        for d in self.differences.iter().filter(|d| d.kind == kind) {
            let as_printed = d.equal_as_printed();
            t.all += 1;
            t.equal += usize::from(d.relative == 0.0);
            t.equal_as_printed += usize::from(as_printed);
            t.within += usize::from(as_printed || d.relative <= 0.01);
        }
        t
    }

    /// The summary and the `top` largest differences as markdown.
    pub fn markdown(&self, top: usize) -> String {
        let mut out = String::from("# CUPTI against ncu, the same passes\n\n");
        for (kind, label) in [(Kind::Counter, "counters"), (Kind::Metric, "metrics")] {
            let t = self.tally(kind);
            out.push_str(&format!(
                "- {label}: {} values compared, {} equal, {} equal to ncu's printed rounding, {} within 1% or that rounding\n",
                t.all, t.equal, t.equal_as_printed, t.within
            ));
        }
        for why in &self.unmatched {
            out.push_str(&format!("- not compared: {why}\n"));
        }
        out.push_str(&format!(
            "\nThe {} largest relative differences:\n\n| difference | kind | job | name | CUPTI | ncu |\n| --- | --- | --- | --- | --- | --- |\n",
            top.min(self.differences.len())
        ));
        let cell = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.6}"));
        for d in self.differences.iter().take(top) {
            out.push_str(&format!(
                "| {:.3}% | {} | {} | `{}` | {} | {} |\n",
                d.relative * 100.0,
                match d.kind {
                    Kind::Counter => "counter",
                    Kind::Metric => "metric",
                },
                d.job.replace('|', "\\|"),
                d.name,
                cell(d.cupti),
                cell(d.ncu)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[(&str, f64)]) -> KernelRow {
        KernelRow {
            id: 0,
            process_id: String::new(),
            kernel_name: "k".into(),
            block_size: String::new(),
            grid_size: String::new(),
            device: String::new(),
            cc: String::new(),
            values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            text: BTreeMap::new(),
        }
    }

    fn record(job: &str, metrics: &[(&str, Option<f64>)]) -> ProfileRecord {
        let mut r = ProfileRecord::failed(job, String::new(), None);
        r.error = None;
        r.metrics = metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        r
    }

    #[test]
    fn relative_difference_is_symmetric_zero_for_equal_and_one_for_missing() {
        assert_eq!(relative(Some(100.0), Some(100.0)), 0.0);
        assert_eq!(relative(Some(0.0), Some(0.0)), 0.0);
        assert!((relative(Some(90.0), Some(100.0)) - 0.1).abs() < 1e-12);
        assert_eq!(
            relative(Some(90.0), Some(100.0)),
            relative(Some(100.0), Some(90.0))
        );
        assert_eq!(relative(None, Some(1.0)), 1.0);
        assert_eq!(relative(Some(f64::NAN), Some(1.0)), 1.0);
        assert_eq!(relative(Some(f64::NAN), Some(f64::NAN)), 0.0);
        assert_eq!(relative(None, None), 0.0);
    }

    #[test]
    fn counters_of_each_launch_and_metrics_of_each_job_are_compared_largest_first() {
        let counters = vec!["a.sum".to_string(), "b.sum".to_string()];
        let c = [
            row(&[("a.sum", 10.0), ("b.sum", 95.0)]),
            row(&[("a.sum", 7.0), ("b.sum", 1.0)]),
        ];
        let n = [
            row(&[
                ("a.sum", 10.0),
                ("b.sum", 100.0),
                ("profiler__replayer_passes", 3.0),
            ]),
            row(&[("a.sum", 7.0), ("b.sum", 1.0)]),
        ];
        let mut check = Crosscheck::default();
        check.add_job(
            &counters,
            &PrintedRounding::default(),
            (&c, &n),
            (
                &record("j", &[("ratio", Some(0.5)), ("none", None)]),
                &record("j", &[("ratio", Some(0.5)), ("none", None)]),
            ),
        );
        check.sort();
        let first = &check.differences[0];
        assert_eq!(
            (first.kind, first.job.as_str(), first.name.as_str()),
            (Kind::Counter, "j #0", "b.sum")
        );
        assert!((first.relative - 0.05).abs() < 1e-12);
        // 4 counters (2 launches x 2, ncu's own counter left out), 2 metrics.
        let t = check.tally(Kind::Counter);
        assert_eq!((t.all, t.equal, t.equal_as_printed, t.within), (4, 3, 3, 3));
        // A ratio undefined for both (no loads at all) agrees.
        let t = check.tally(Kind::Metric);
        assert_eq!((t.all, t.equal, t.within), (2, 2, 2));
        let md = check.markdown(1);
        assert!(
            md.contains("- counters: 4 values compared, 3 equal, 3 equal to ncu's printed rounding, 3 within 1% or that rounding"),
            "{md}"
        );
        assert!(
            md.contains("| 5.000% | counter | j #0 | `b.sum` | 95.000000 | 100.000000 |"),
            "{md}"
        );
        assert_eq!(
            md.matches("| counter |").count() + md.matches("| metric |").count(),
            1
        );
    }

    #[test]
    fn a_metric_one_profiler_could_not_give_counts_as_wholly_different() {
        let mut check = Crosscheck::default();
        check.add_job(
            &[],
            &PrintedRounding::default(),
            (&[], &[]),
            (
                &record("j", &[("m", Some(1.0))]),
                &record("j", &[("m", None)]),
            ),
        );
        assert_eq!(check.differences[0].relative, 1.0);
        assert!(
            check
                .markdown(5)
                .contains("| 100.000% | metric | j | `m` | 1.000000 | – |")
        );
    }

    #[test]
    fn launches_counted_differently_are_named_not_shifted() {
        let mut check = Crosscheck::default();
        let one = [row(&[("a", 1.0)])];
        check.add_job(
            &["a".to_string()],
            &PrintedRounding::default(),
            (&one, &[]),
            (&record("j", &[]), &record("j", &[])),
        );
        assert_eq!(
            check.unmatched,
            vec!["j: CUPTI gave 1 kernels, ncu 0".to_string()]
        );
        assert!(check.differences.is_empty());
        check.add_unmatched("k", "ncu failed");
        assert!(check.markdown(3).contains("- not compared: k: ncu failed"));
    }

    #[test]
    fn a_counter_within_ncus_printed_rounding_is_equal_as_printed_and_no_closer() {
        // ncu printed 0.94 and 0.01 (two decimals); CUPTI read 0.9449, which prints as 0.94, and
        // 0.0163, which does not.
        let counters = vec!["pct".to_string(), "ratio".to_string(), "count".to_string()];
        let printed = [("pct".to_string(), 0.005), ("ratio".to_string(), 0.005)].into();
        let rounding = PrintedRounding {
            counters: &printed,
            metrics: BTreeMap::new(),
        };
        let c = [row(&[("pct", 0.9449), ("ratio", 0.0163), ("count", 101.0)])];
        let n = [row(&[("pct", 0.94), ("ratio", 0.01), ("count", 100.0)])];
        let mut check = Crosscheck::default();
        check.add_job(
            &counters,
            &rounding,
            (&c, &n),
            (&record("j", &[]), &record("j", &[])),
        );
        let by = |name: &str| check.differences.iter().find(|d| d.name == name).unwrap();
        assert!(by("pct").equal_as_printed());
        assert!(
            !by("ratio").equal_as_printed(),
            "0.0063 apart is past 0.005's rounding"
        );
        assert!(!by("count").equal_as_printed(), "no printed rounding known");
        let t = check.tally(Kind::Counter);
        assert_eq!(
            (t.all, t.equal, t.equal_as_printed, t.within),
            (3, 0, 1, 2),
            "count is 1% apart"
        );
    }
}
