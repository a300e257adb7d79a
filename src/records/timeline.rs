//! The recorded timeline of a host-program variant (when each step ran, on which stream) and what it says: how much of the kernels' time the transfers hid (pure).

use serde::{Deserialize, Serialize};

use crate::stats::median_in_place;

/// What kind of work a timed step did, for colours, bandwidths and the overlap.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    H2d,
    D2h,
    D2d,
    Kernel,
    Memset,
    Prefetch,
}

impl StepKind {
    pub fn name(self) -> &'static str {
        match self {
            StepKind::H2d => "h2d",
            StepKind::D2h => "d2h",
            StepKind::D2d => "d2d",
            StepKind::Kernel => "kernel",
            StepKind::Memset => "memset",
            StepKind::Prefetch => "prefetch",
        }
    }

    /// It crosses the host link (copies between host and device, and managed-memory prefetches).
    pub fn is_transfer(self) -> bool {
        matches!(self, StepKind::H2d | StepKind::D2h | StepKind::Prefetch)
    }
}

/// One timed step: its start and end from the start of the sample, in ms (CUDA events recorded
/// around it on its stream).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepTime {
    pub label: String,
    pub kind: StepKind,
    /// The stream's name (`NULL` for the NULL stream).
    pub stream: String,
    pub start_ms: f64,
    pub end_ms: f64,
    /// Bytes it moved (0 for kernels).
    #[serde(default)]
    pub bytes: u64,
    /// Its duration's median over every sample of the job, in ms.
    pub median_ms: f64,
}

impl StepTime {
    pub fn ms(&self) -> f64 {
        (self.end_ms - self.start_ms).max(0.0)
    }

    /// GB/s of the bytes it moved over its median duration.
    pub fn gbs(&self) -> Option<f64> {
        (self.bytes > 0 && self.median_ms > 0.0).then(|| self.bytes as f64 / self.median_ms / 1e6)
    }
}

/// The steps of one sample (the one whose total is nearest the job's median), in issue order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Timeline {
    /// That sample's end-to-end time, ms.
    pub total_ms: f64,
    pub steps: Vec<StepTime>,
    /// Made by the mock executor: no GPU ran it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mock: bool,
}

/// How the kernels and the transfers of a timeline overlapped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overlap {
    /// Time some kernel ran, ms (overlapping kernels counted once).
    pub kernel_ms: f64,
    /// Time some transfer ran, ms.
    pub transfer_ms: f64,
    /// Time both ran at once, ms.
    pub both_ms: f64,
}

impl Overlap {
    /// The share of the kernels' time during which a transfer ran too, %.
    pub fn kernel_hidden_pct(&self) -> Option<f64> {
        (self.kernel_ms > 0.0).then(|| 100.0 * self.both_ms / self.kernel_ms)
    }

    /// The share of the transfers' time during which a kernel ran too, %.
    pub fn transfer_hidden_pct(&self) -> Option<f64> {
        (self.transfer_ms > 0.0).then(|| 100.0 * self.both_ms / self.transfer_ms)
    }
}

/// A step's label without the chunk it was repeated for: `h2d a #3` -> `h2d a` (suite::steps
/// labels a repeated step `LABEL #CHUNK`).
pub fn without_chunk(label: &str) -> &str {
    match label.rsplit_once(" #") {
        Some((head, chunk)) if !chunk.is_empty() && chunk.chars().all(|c| c.is_ascii_digit()) => {
            head
        }
        _ => label,
    }
}

/// The time during which some of these spans ran, ms: overlapping spans counted once, empty,
/// backwards and NaN spans not at all.
pub fn busy_ms(spans: Vec<(f64, f64)>) -> f64 {
    length(&union(spans))
}

/// The union of intervals, sorted and merged.
fn union(mut spans: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    spans.retain(|(a, b)| b > a);
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

fn length(spans: &[(f64, f64)]) -> f64 {
    spans.iter().map(|(a, b)| b - a).sum()
}

/// The length of the intersection of two merged unions.
fn intersection(x: &[(f64, f64)], y: &[(f64, f64)]) -> f64 {
    let (mut i, mut j, mut total) = (0, 0, 0.0);
    while i < x.len() && j < y.len() {
        let (a, b) = (x[i].0.max(y[j].0), x[i].1.min(y[j].1));
        if b > a {
            total += b - a;
        }
        if x[i].1 < y[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// A timed step as the program knows it, before any sample: what it is called, does, runs on and moves.
#[derive(Debug, Clone, PartialEq)]
pub struct StepInfo {
    pub label: String,
    pub kind: StepKind,
    pub stream: String,
    pub bytes: u64,
}

impl Timeline {
    /// The timeline of the sample whose total is nearest the median of `totals`; each step with
    /// its median duration over every sample. `spans[sample][step]` is the step's (start, end) in
    /// that sample, from its start (None where a step was not timed).
    pub fn nearest_median(
        steps: &[StepInfo],
        totals: &[f64],
        spans: &[Vec<Option<(f64, f64)>>],
    ) -> Timeline {
        let median = if totals.is_empty() {
            0.0
        } else {
            median_in_place(&mut totals.to_vec())
        };
        let chosen = (0..totals.len())
            .min_by(|&a, &b| {
                (totals[a] - median)
                    .abs()
                    .total_cmp(&(totals[b] - median).abs())
            })
            .unwrap_or(0);
        let steps = steps
            .iter()
            .enumerate()
            .filter_map(|(i, info)| {
                let (start_ms, end_ms) = spans.get(chosen)?.get(i).copied().flatten()?;
                // Never empty: the chosen sample timed this step.
                let mut durations: Vec<f64> = spans
                    .iter()
                    .filter_map(|s| s.get(i).copied().flatten().map(|(a, b)| b - a))
                    .collect();
                let median_ms = median_in_place(&mut durations);
                Some(StepTime {
                    label: info.label.clone(),
                    kind: info.kind,
                    stream: info.stream.clone(),
                    start_ms,
                    end_ms,
                    bytes: info.bytes,
                    median_ms,
                })
            })
            .collect();
        Timeline {
            total_ms: totals.get(chosen).copied().unwrap_or(0.0),
            steps,
            mock: false,
        }
    }

    pub fn overlap(&self) -> Overlap {
        let spans = |keep: fn(StepKind) -> bool| {
            union(
                self.steps
                    .iter()
                    .filter(|s| keep(s.kind))
                    .map(|s| (s.start_ms, s.end_ms))
                    .collect(),
            )
        };
        let kernels = spans(|k| k == StepKind::Kernel);
        let transfers = spans(StepKind::is_transfer);
        Overlap {
            kernel_ms: length(&kernels),
            transfer_ms: length(&transfers),
            both_ms: intersection(&kernels, &transfers),
        }
    }

    /// The streams in the order their first step was issued.
    pub fn streams(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for s in &self.steps {
            if !out.contains(&s.stream.as_str()) {
                out.push(&s.stream);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(kind: StepKind, stream: &str, start_ms: f64, end_ms: f64) -> StepTime {
        StepTime {
            label: kind.name().into(),
            kind,
            stream: stream.into(),
            start_ms,
            end_ms,
            bytes: 0,
            median_ms: end_ms - start_ms,
        }
    }

    #[test]
    fn overlap_counts_time_once_however_many_streams_share_it() {
        // Two streams: copies 0-4 and 2-6, kernels 3-5 and 4-8; one memset that counts as neither.
        let t = Timeline {
            total_ms: 8.0,
            steps: vec![
                step(StepKind::H2d, "s[0]", 0.0, 4.0),
                step(StepKind::D2h, "s[1]", 2.0, 6.0),
                step(StepKind::Kernel, "s[0]", 3.0, 5.0),
                step(StepKind::Kernel, "s[1]", 4.0, 8.0),
                step(StepKind::Memset, "NULL", 0.0, 8.0),
            ],
            mock: false,
        };
        let o = t.overlap();
        assert_eq!((o.kernel_ms, o.transfer_ms, o.both_ms), (5.0, 6.0, 3.0));
        assert_eq!(o.kernel_hidden_pct(), Some(60.0));
        assert_eq!(o.transfer_hidden_pct(), Some(50.0));
        assert_eq!(t.streams(), vec!["s[0]", "s[1]", "NULL"]);
    }

    #[test]
    fn a_serial_program_hides_nothing_and_one_without_kernels_has_no_share() {
        let serial = Timeline {
            total_ms: 3.0,
            steps: vec![
                step(StepKind::H2d, "NULL", 0.0, 1.0),
                step(StepKind::Kernel, "NULL", 1.0, 2.0),
                step(StepKind::D2h, "NULL", 2.0, 3.0),
            ],
            mock: false,
        };
        assert_eq!(serial.overlap().kernel_hidden_pct(), Some(0.0));
        let copies = Timeline {
            total_ms: 1.0,
            steps: vec![step(StepKind::H2d, "NULL", 0.0, 1.0)],
            mock: false,
        };
        assert_eq!(
            (
                copies.overlap().kernel_hidden_pct(),
                copies.overlap().transfer_hidden_pct()
            ),
            (None, Some(0.0))
        );
    }

    #[test]
    fn the_timeline_is_the_sample_nearest_the_median_with_each_steps_median() {
        let info = |label: &str, kind| StepInfo {
            label: label.into(),
            kind,
            stream: "NULL".into(),
            bytes: 8,
        };
        let steps = [
            info("h2d a", StepKind::H2d),
            info("kernel k", StepKind::Kernel),
        ];
        // Totals 3, 10, 4: median 4, so the third sample is drawn; the kernel was not timed in the first.
        let spans = vec![
            vec![Some((0.0, 1.0)), None],
            vec![Some((0.0, 9.0)), Some((9.0, 10.0))],
            vec![Some((0.0, 2.0)), Some((2.0, 4.0))],
        ];
        let t = Timeline::nearest_median(&steps, &[3.0, 10.0, 4.0], &spans);
        assert_eq!(t.total_ms, 4.0);
        assert_eq!(
            t.steps
                .iter()
                .map(|s| (s.start_ms, s.end_ms, s.median_ms))
                .collect::<Vec<_>>(),
            vec![(0.0, 2.0, 2.0), (2.0, 4.0, 1.5)]
        );
        assert!(!t.mock);
        // No samples: an empty timeline, not a panic.
        assert!(Timeline::nearest_median(&steps, &[], &[]).steps.is_empty());
    }

    #[test]
    fn gbs_is_bytes_over_the_median_duration() {
        let mut s = step(StepKind::H2d, "NULL", 0.0, 2.0);
        s.bytes = 50_000_000;
        s.median_ms = 2.0;
        assert_eq!(s.gbs(), Some(25.0));
        assert_eq!(step(StepKind::Kernel, "NULL", 0.0, 1.0).gbs(), None);
    }
}
