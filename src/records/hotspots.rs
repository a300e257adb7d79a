//! Source hot spots of one job (`--hotspots`): per kernel, the CUDA source lines where its warps were sampled most, each with its dominant stall reason, excess global sectors and shared-memory conflicts, as `results.jsonl` stores them inside the job's profile record.

use serde::{Deserialize, Serialize};

/// What ncu's SourceCounters and WarpStateStats sections said of one job's kernels, line by line.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Hotspots {
    /// The `.ncu-rep` the lines were read from (kept beside the run for the Nsight Compute GUI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_file: Option<String>,
    /// One entry per kernel launch of the job, in launch order.
    #[serde(default)]
    pub kernels: Vec<KernelHotspots>,
    /// Why there are no lines (the session failed, no line info, a mock run), when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The hottest source lines of one kernel.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelHotspots {
    pub kernel: String,
    /// Warp-state samples over every line of the kernel: each line's share is of this.
    pub samples: f64,
    /// Source lines that had any sample (the table shows the top few of them).
    pub lines_sampled: usize,
    /// The hottest lines, most samples first.
    pub lines: Vec<HotLine>,
    /// Why the lines are CUDA source lines or not (e.g. the kernel was built without -lineinfo,
    /// so only SASS addresses could be listed), when ncu could not map them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One kernel of a program that `gpu-lab ncu --hotspots` profiled: its launches' lines summed.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramKernel {
    pub launches: usize,
    pub hotspots: KernelHotspots,
}

/// One CUDA source line (every SASS instruction ncu attributes to it, summed).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HotLine {
    /// The source file's name (no directory: a path of the machine it ran on says nothing here).
    pub file: String,
    pub line: u32,
    /// The line's text as ncu imported it, trimmed; empty where ncu had no source.
    pub source: String,
    /// Warp-state samples at this line (all samples, issued or not).
    pub samples: f64,
    /// The stall reason with the most samples at this line, and its samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
    /// Global sectors moved beyond the ideal for these accesses (L2 theoretical sectors, excessive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excess_sectors: Option<f64>,
    /// Shared-memory wavefronts and the ideal number for these accesses: their ratio is the
    /// n-way bank conflict (1 = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_wavefronts: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_wavefronts_ideal: Option<f64>,
}

/// A stall reason at one line.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Stall {
    /// ncu's name of the reason (`long_scoreboard`, `barrier`, `mio_throttle`, …).
    pub reason: String,
    pub samples: f64,
}

impl HotLine {
    /// The n-way shared-memory bank conflict of the line's shared accesses (wavefronts per
    /// ideal wavefront); None where the line has no shared access.
    pub fn bank_conflict_ways(&self) -> Option<f64> {
        match (self.shared_wavefronts, self.shared_wavefronts_ideal) {
            (Some(w), Some(ideal)) if ideal > 0.0 => Some(w / ideal),
            _ => None,
        }
    }
}

impl Hotspots {
    /// No lines, and why.
    pub fn failed(why: String, report_file: Option<String>) -> Self {
        Hotspots {
            report_file,
            kernels: Vec::new(),
            error: Some(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conflict_ways_are_wavefronts_per_ideal_wavefront_and_none_without_shared_accesses() {
        let mut line = HotLine {
            shared_wavefronts: Some(32_768.0),
            shared_wavefronts_ideal: Some(1_024.0),
            ..HotLine::default()
        };
        assert_eq!(line.bank_conflict_ways(), Some(32.0));
        line.shared_wavefronts_ideal = Some(0.0);
        assert_eq!(line.bank_conflict_ways(), None);
        line.shared_wavefronts = None;
        assert_eq!(line.bank_conflict_ways(), None);
    }

    #[test]
    fn a_record_without_optional_fields_reads_back_and_writes_none_of_them() {
        let h = Hotspots {
            report_file: None,
            kernels: vec![KernelHotspots {
                kernel: "k".into(),
                samples: 10.0,
                lines_sampled: 1,
                lines: vec![HotLine {
                    file: "k.cu".into(),
                    line: 3,
                    samples: 10.0,
                    ..HotLine::default()
                }],
                note: None,
            }],
            error: None,
        };
        let json = serde_json::to_string(&h).unwrap();
        assert!(!json.contains("stall") && !json.contains("error"), "{json}");
        assert_eq!(serde_json::from_str::<Hotspots>(&json).unwrap(), h);
    }
}
