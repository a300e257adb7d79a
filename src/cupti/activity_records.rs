//! CUPTI Activity kernel records read from their bytes, and a job's per-sample GPU time from them: pure (no CUPTI, no GPU), so captured records test it anywhere.
//!
//! The layout is `CUpti_ActivityKernel10` of CUPTI 13 (`cupti_activity.h`, CUPTI_API_VERSION
//! 130001); offsets printed by a C++ program compiled against those headers (2026-11-26). The
//! fields read here (kind, start, end, streamId, correlationId, name) sit at the same offsets in
//! every version from `CUpti_ActivityKernel4` to `CUpti_ActivityKernel10`; a record shorter than
//! the name's end, a kind that is not a kernel, or a CUPTI outside the versions checked is refused.

use crate::stats::{self, Summary};

/// `CUPTI_ACTIVITY_KIND_KERNEL`.
pub const KIND_KERNEL: u32 = 3;
/// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
pub const KIND_CONCURRENT_KERNEL: u32 = 10;

const OFFSET_KIND: usize = 0;
const OFFSET_START: usize = 16;
const OFFSET_END: usize = 24;
const OFFSET_STREAM: usize = 48;
const OFFSET_CORRELATION: usize = 92;
/// `const char *name`, 8 bytes.
pub const OFFSET_NAME: usize = 104;
/// Where the fields read end: a record must be at least this long.
pub const MIN_RECORD_BYTES: usize = OFFSET_NAME + 8;
/// `uint32_t sharedMemoryExecuted`: the shared memory the driver configured for the launch (its
/// carveout, ncu's `launch__shared_mem_config_size`); offset printed as the others (2026-11-26).
const OFFSET_SHARED_EXECUTED: usize = 140;
/// `sizeof(CUpti_ActivityKernel10)`, the record CUPTI 13.0 writes.
pub const KERNEL10_BYTES: usize = 216;

/// The CUPTI API versions whose kernel record layout is known here: CUPTI 13.x.
pub fn layout_known(cupti_api_version: u32) -> bool {
    (130_000..140_000).contains(&cupti_api_version)
}

/// Why CUPTI's version is refused, with the fix.
pub fn unknown_layout_message(cupti_api_version: u32) -> String {
    format!(
        "CUPTI API version {cupti_api_version} writes kernel activity records whose layout gpu-lab does not know (it reads CUPTI 13's CUpti_ActivityKernel10, versions 130000 to 139999); the event timing stands alone. Fix: use CUDA 13's CUPTI, or report the version so its layout can be added"
    )
}

/// The fields of one kernel record that gpu-lab uses (the name as the pointer CUPTI gave).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRecord {
    pub kind: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub stream: u32,
    pub correlation: u32,
    pub name_ptr: u64,
    /// `sharedMemoryExecuted`, where the record is long enough to hold it.
    pub shared_executed: Option<u32>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads one record's bytes (as long as CUPTI spaced it in the buffer); `None` for a record that
/// is not a kernel's. A kernel record too short for its fields, or ending before it starts, is an error.
pub fn parse_kernel(bytes: &[u8]) -> Result<Option<KernelRecord>, String> {
    if bytes.len() < 4 {
        return Err(format!("an activity record of {} bytes", bytes.len()));
    }
    let kind = u32_at(bytes, OFFSET_KIND);
    if kind != KIND_KERNEL && kind != KIND_CONCURRENT_KERNEL {
        return Ok(None);
    }
    if bytes.len() < MIN_RECORD_BYTES {
        return Err(format!(
            "a kernel activity record of {} bytes, shorter than the {MIN_RECORD_BYTES} its fields need: an unknown layout",
            bytes.len()
        ));
    }
    let r = KernelRecord {
        kind,
        start_ns: u64_at(bytes, OFFSET_START),
        end_ns: u64_at(bytes, OFFSET_END),
        stream: u32_at(bytes, OFFSET_STREAM),
        correlation: u32_at(bytes, OFFSET_CORRELATION),
        name_ptr: u64_at(bytes, OFFSET_NAME),
        shared_executed: (bytes.len() >= OFFSET_SHARED_EXECUTED + 4)
            .then(|| u32_at(bytes, OFFSET_SHARED_EXECUTED)),
    };
    if r.end_ns < r.start_ns {
        return Err(format!(
            "a kernel activity record that ends ({}) before it starts ({}): an unknown layout",
            r.end_ns, r.start_ns
        ));
    }
    Ok(Some(r))
}

/// A kernel as the collector keeps it: its span and whether gpu-lab's own L2 flush ran it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSpan {
    pub start_ns: u64,
    pub end_ns: u64,
    pub flush: bool,
    /// The carveout the driver configured (`KernelRecord::shared_executed`).
    pub shared_executed: Option<u32>,
}

/// The kernel of cold timing's L2 flush (`runner::l2_flush`), left out of a sample's time.
pub const FLUSH_KERNEL: &str = "gpu_lab_evict_l2";

/// Whether a kernel's name is the L2 flush's (a mangled or plain name alike).
pub fn is_flush_kernel(name: &str) -> bool {
    name == FLUSH_KERNEL
}

/// One sample's host timestamps in CUPTI's clock: taken before its work was enqueued and after
/// the host waited for it, so each of its kernels ran inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleWindow {
    pub begin_ns: u64,
    pub end_ns: u64,
    /// The runs of the variant the sample holds (its time is per run).
    pub runs: u32,
}

/// Per sample, the ms per run that the job's own kernels ran on the GPU: the sum of every kernel
/// (not the flush) whose midpoint falls in the sample's window, over the sample's runs. A sample
/// that saw no kernel of the job gives `None` (records dropped, or a clock that disagrees).
pub fn per_sample_ms(spans: &[KernelSpan], windows: &[SampleWindow]) -> Vec<Option<f64>> {
    let mut sums = vec![(0u64, 0usize); windows.len()];
    for s in spans.iter().filter(|s| !s.flush) {
        let mid = s.start_ns / 2 + s.end_ns / 2;
        // Windows are in time order and disjoint: the last that began at or before the midpoint.
        let i = windows.partition_point(|w| w.begin_ns <= mid);
        if let Some(w) = i.checked_sub(1).filter(|&i| mid <= windows[i].end_ns) {
            sums[w].0 += s.end_ns - s.start_ns;
            sums[w].1 += 1;
        }
    }
    sums.iter()
        .zip(windows)
        .map(|(&(ns, kernels), w)| (kernels > 0).then(|| ns as f64 / 1e6 / w.runs.max(1) as f64))
        .collect()
}

/// A job's activity durations as recorded: per sample, their summary, the kernels a sample held.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivitySamples {
    pub samples_ms: Vec<f64>,
    pub summary: Option<Summary>,
    /// Samples in which no kernel of the job was recorded.
    pub missing: usize,
    /// Kernels of the job per sample run (the flush left out), as counted over all samples.
    pub kernels_per_run: f64,
}

/// `per_sample_ms` summarised with the stats module, and what was missing.
pub fn summarize_samples(spans: &[KernelSpan], windows: &[SampleWindow]) -> ActivitySamples {
    let per = per_sample_ms(spans, windows);
    let samples_ms: Vec<f64> = per.iter().flatten().copied().collect();
    let in_windows = count_in_windows(spans, windows);
    let runs: u64 = windows.iter().map(|w| w.runs.max(1) as u64).sum();
    ActivitySamples {
        summary: stats::summarize(&samples_ms),
        missing: per.len() - samples_ms.len(),
        kernels_per_run: if runs == 0 {
            0.0
        } else {
            in_windows as f64 / runs as f64
        },
        samples_ms,
    }
}

fn count_in_windows(spans: &[KernelSpan], windows: &[SampleWindow]) -> usize {
    spans
        .iter()
        .filter(|s| !s.flush)
        .filter(|s| {
            let mid = s.start_ns / 2 + s.end_ns / 2;
            windows.iter().any(|w| w.begin_ns <= mid && mid <= w.end_ns)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u32, start: u64, end: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; KERNEL10_BYTES];
        b[0..4].copy_from_slice(&kind.to_le_bytes());
        b[16..24].copy_from_slice(&start.to_le_bytes());
        b[24..32].copy_from_slice(&end.to_le_bytes());
        b[48..52].copy_from_slice(&7u32.to_le_bytes());
        b[92..96].copy_from_slice(&42u32.to_le_bytes());
        b[104..112].copy_from_slice(&0xdead_beefu64.to_le_bytes());
        b.truncate(len);
        b
    }

    #[test]
    fn a_kernel_record_gives_its_span_stream_correlation_and_name_pointer() {
        let r = parse_kernel(&record(KIND_CONCURRENT_KERNEL, 1000, 3500, KERNEL10_BYTES))
            .unwrap()
            .unwrap();
        assert_eq!((r.start_ns, r.end_ns, r.stream), (1000, 3500, 7));
        assert_eq!((r.correlation, r.name_ptr), (42, 0xdead_beef));
    }

    #[test]
    fn other_kinds_are_skipped_and_bad_kernel_records_refused() {
        assert_eq!(parse_kernel(&record(1, 0, 0, 64)).unwrap(), None);
        let short = parse_kernel(&record(KIND_KERNEL, 0, 1, 100)).unwrap_err();
        assert!(short.contains("unknown layout"), "{short}");
        let backwards = parse_kernel(&record(KIND_KERNEL, 9, 1, KERNEL10_BYTES)).unwrap_err();
        assert!(backwards.contains("before it starts"), "{backwards}");
        assert!(parse_kernel(&[1, 0]).is_err());
    }

    #[test]
    fn only_cupti_13_layouts_are_read() {
        assert!(layout_known(130_001));
        assert!(!layout_known(26));
        assert!(!layout_known(140_000));
        assert!(unknown_layout_message(26).contains("Fix:"));
    }

    fn span(start: u64, end: u64, flush: bool) -> KernelSpan {
        KernelSpan {
            start_ns: start,
            end_ns: end,
            flush,
            shared_executed: None,
        }
    }

    #[test]
    fn a_sample_sums_its_own_kernels_without_the_flush_per_run() {
        let windows = [
            SampleWindow {
                begin_ns: 0,
                end_ns: 1000,
                runs: 1,
            },
            SampleWindow {
                begin_ns: 2000,
                end_ns: 3000,
                runs: 2,
            },
            SampleWindow {
                begin_ns: 4000,
                end_ns: 5000,
                runs: 1,
            },
        ];
        let spans = [
            span(10, 300, true),
            span(300, 400, false),
            span(400, 600, false),
            // Between windows (a verification's launch): nobody's.
            span(1500, 1600, false),
            span(2100, 2500, false),
            span(2500, 2900, false),
        ];
        let per = per_sample_ms(&spans, &windows);
        assert_eq!(per, vec![Some(300e-6), Some(400e-6), None]);
        let s = summarize_samples(&spans, &windows);
        assert_eq!(s.missing, 1);
        assert_eq!(s.samples_ms.len(), 2);
        assert!(
            (s.kernels_per_run - 1.0).abs() < 1e-12,
            "{}",
            s.kernels_per_run
        );
        assert!(s.summary.is_some());
    }

    #[test]
    fn the_flush_kernel_is_known_by_name() {
        assert!(is_flush_kernel("gpu_lab_evict_l2"));
        assert!(!is_flush_kernel("transpose_naive"));
    }
}
