//! Throughput from the records: GB/s and GFLOP/s of a job, of the copy bound, the host link and
//! cuBLAS, and the FP32 peak that the measured FMA rate implies (pure).

use super::bounds::{BoundsRecord, ComputeBoundRecord, FmaRate, HostLinkBounds};
use super::job::JobRecord;
use super::outcome::HostLinkSamples;
use super::timeline::StepKind;
use crate::stats::Summary;

/// Giga-units per second of `amount` done in `ms` milliseconds (bytes -> GB/s, flops -> GFLOP/s).
pub fn per_second_g(amount: f64, ms: f64) -> f64 {
    amount / (ms * 1e-3) / 1e9
}

/// `per_second_g` where it means something: a positive amount over a positive time.
fn rate(amount: f64, ms: f64) -> Option<f64> {
    (amount > 0.0 && ms > 0.0 && amount.is_finite() && ms.is_finite())
        .then(|| per_second_g(amount, ms))
}

impl JobRecord {
    pub fn gbs(&self) -> Option<f64> {
        rate(self.work.bytes?, self.summary?.median)
    }
    pub fn gflops(&self) -> Option<f64> {
        rate(self.work.flops?, self.summary?.median)
    }
}

impl HostLinkBounds {
    pub fn from_samples(s: &HostLinkSamples) -> Self {
        s.map(|samples| crate::stats::summarize(samples))
    }

    /// GB/s of a copy of `bytes` timed as `s` (a bidirectional copy moves `bytes` each way).
    pub fn gbs(bytes: u64, s: &Option<Summary>, ways: f64) -> Option<f64> {
        s.as_ref()
            .filter(|s| s.median > 0.0)
            .map(|s| per_second_g(ways * bytes as f64, s.median))
    }

    /// The pinned bandwidth a copy of this kind is compared with.
    pub fn pinned_gbs(&self, bytes: u64, kind: StepKind) -> Option<f64> {
        match kind {
            StepKind::H2d => Self::gbs(bytes, &self.h2d_pinned, 1.0),
            StepKind::D2h => Self::gbs(bytes, &self.d2h_pinned, 1.0),
            _ => None,
        }
    }
}

impl FmaRate {
    pub fn gflops(&self) -> f64 {
        per_second_g(self.flops, self.summary.median)
    }

    /// FP32 lanes per SM: the measured rate over 2 flops per lane per cycle at `sm_mhz`, rounded
    /// to the power of two it must be (a rate a little under the peak still names the lanes).
    pub fn lanes_per_sm(&self, sm_mhz: u32) -> Option<u32> {
        let per_cycle = self.gflops() * 1e3 / (2.0 * self.sm_count as f64 * sm_mhz as f64);
        (per_cycle.is_finite() && per_cycle >= 1.0).then(|| 1u32 << per_cycle.log2().round() as u32)
    }

    /// The FP32 peak: SMs x lanes per SM x 2 x the SM clock, GFLOP/s.
    pub fn peak_gflops(&self, sm_mhz: u32) -> Option<f64> {
        Some(self.sm_count as f64 * self.lanes_per_sm(sm_mhz)? as f64 * 2.0 * sm_mhz as f64 / 1e3)
    }
}

impl ComputeBoundRecord {
    pub fn gflops(&self) -> Option<f64> {
        Some(per_second_g(self.flops, self.summary?.median))
    }
}

impl BoundsRecord {
    /// The faster of the two copies (a timing with a positive median).
    pub fn best_copy(&self) -> Option<&Summary> {
        [&self.memcpy, &self.copy_kernel]
            .into_iter()
            .flatten()
            .filter(|s| s.median > 0.0)
            .min_by(|a, b| a.median.total_cmp(&b.median))
    }
    /// GB/s of a copy of `bytes` timed as `s`: every byte is read once and written once.
    fn gbs_of(&self, s: &Summary) -> f64 {
        per_second_g(2.0 * self.bytes as f64, s.median)
    }
    /// The better of the two copies, in GB/s of bytes read plus written.
    pub fn copy_gbs(&self) -> Option<f64> {
        self.best_copy().map(|s| self.gbs_of(s))
    }
    pub fn memcpy_gbs(&self) -> Option<f64> {
        self.memcpy.as_ref().map(|s| self.gbs_of(s))
    }
    pub fn kernel_gbs(&self) -> Option<f64> {
        self.copy_kernel.as_ref().map(|s| self.gbs_of(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::job::Work;
    use crate::stats::summarize;

    fn timed(ms: f64) -> Option<Summary> {
        summarize(&[ms])
    }

    #[test]
    fn a_job_has_a_rate_only_for_positive_finite_work_and_time() {
        let mut job = JobRecord {
            work: Work {
                bytes: Some(2e9),
                flops: Some(1e12),
                ..Default::default()
            },
            summary: timed(1000.0),
            ..Default::default()
        };
        assert_eq!(job.gbs(), Some(2.0));
        assert_eq!(job.gflops(), Some(1000.0));
        job.work.bytes = Some(0.0);
        job.work.flops = None;
        assert_eq!((job.gbs(), job.gflops()), (None, None));
        job.work.bytes = Some(2e9);
        job.summary = timed(0.0);
        assert_eq!(job.gbs(), None, "a zero median is no time");
        assert_eq!(rate(f64::INFINITY, 1.0), None);
        assert_eq!(per_second_g(1e9, 1.0), 1000.0);
    }

    fn bounds(memcpy_ms: Option<f64>, kernel_ms: Option<f64>) -> BoundsRecord {
        BoundsRecord {
            group: "g".into(),
            bytes: 1_000_000_000,
            memcpy: memcpy_ms.and_then(timed),
            copy_kernel: kernel_ms.and_then(timed),
            error: None,
            fma: None,
            gpu: None,
            host: None,
            roofs: Vec::new(),
        }
    }

    #[test]
    fn the_copy_bound_is_the_faster_copy_counting_each_byte_read_and_written() {
        let b = bounds(Some(2.0), Some(1.0));
        assert_eq!(b.best_copy().map(|s| s.median), Some(1.0));
        assert_eq!(b.copy_gbs(), Some(2000.0));
        assert_eq!(b.memcpy_gbs(), Some(1000.0));
        assert_eq!(b.kernel_gbs(), Some(2000.0));
        // A copy timed at zero is no copy: the other one is the bound.
        assert_eq!(bounds(Some(0.0), Some(4.0)).copy_gbs(), Some(500.0));
        assert_eq!(bounds(None, None).copy_gbs(), None);
    }

    #[test]
    fn host_link_copies_are_compared_with_the_pinned_copy_of_their_direction() {
        let link = HostLinkBounds {
            h2d_pinned: timed(1.0),
            d2h_pinned: timed(2.0),
            bidirectional_pinned: timed(4.0),
            h2d_pageable: None,
            d2h_pageable: None,
        };
        assert_eq!(link.pinned_gbs(1_000_000_000, StepKind::H2d), Some(1000.0));
        assert_eq!(link.pinned_gbs(1_000_000_000, StepKind::D2h), Some(500.0));
        assert_eq!(link.pinned_gbs(1_000_000_000, StepKind::Kernel), None);
        assert_eq!(
            HostLinkBounds::gbs(1_000_000_000, &link.bidirectional_pinned, 2.0),
            Some(500.0)
        );
        assert_eq!(HostLinkBounds::gbs(1, &timed(0.0), 1.0), None);
        let samples = HostLinkSamples {
            h2d_pinned: vec![1.0, 3.0, 2.0],
            ..Default::default()
        };
        let summarised = HostLinkBounds::from_samples(&samples);
        assert_eq!(summarised.h2d_pinned.map(|s| s.median), Some(2.0));
        assert_eq!(summarised.d2h_pinned, None);
    }

    #[test]
    fn the_fma_rate_names_the_lanes_per_sm_and_the_fp32_peak() {
        // The FMA line of a committed H100 run (cxx-h100): 132 SMs at 1980 MHz.
        let fma = FmaRate {
            flops: 17716740096.0,
            summary: summarize(&[0.27847999334335327]).unwrap(),
            sm_count: 132,
        };
        assert!((fma.gflops() - 63619.4).abs() < 0.1, "{}", fma.gflops());
        assert_eq!(fma.lanes_per_sm(1980), Some(128));
        let peak = fma.peak_gflops(1980).unwrap();
        assert!((peak - 66908.16).abs() < 1e-6, "{peak}");
        assert_eq!(fma.lanes_per_sm(0), None, "no clock, no lanes");
    }

    #[test]
    fn a_compute_bound_without_a_timing_has_no_rate() {
        let mut c = ComputeBoundRecord {
            group: "g".into(),
            key: "k".into(),
            math_mode: "m".into(),
            flops: 2e12,
            summary: timed(2.0),
            samples_ms: vec![2.0],
            error: None,
            gpu: None,
        };
        assert_eq!(c.gflops(), Some(1e6));
        c.summary = None;
        assert_eq!(c.gflops(), None);
    }
}
