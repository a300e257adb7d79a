//! compute-sanitizer's view of one variant, as `results.jsonl` stores it: the tool, what it found (deduplicated), or why it could not say.

use serde::{Deserialize, Serialize};

/// The compute-sanitizer tools `--sanitize` runs, in the order they run.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum SanitizerTool {
    /// Out-of-bounds and misaligned accesses (with padding after every allocation).
    Memcheck,
    /// Reads of global memory nothing wrote.
    Initcheck,
    /// Barriers in divergent code and other synchronisation misuse.
    Synccheck,
    /// Shared-memory hazards (by default only for variants that use shared memory: 88-1000x a launch).
    Racecheck,
}

impl SanitizerTool {
    pub const ALL: [SanitizerTool; 4] = [
        SanitizerTool::Memcheck,
        SanitizerTool::Initcheck,
        SanitizerTool::Synccheck,
        SanitizerTool::Racecheck,
    ];

    /// The word compute-sanitizer's `--tool` takes (and the stored one).
    pub fn as_str(self) -> &'static str {
        match self {
            SanitizerTool::Memcheck => "memcheck",
            SanitizerTool::Initcheck => "initcheck",
            SanitizerTool::Synccheck => "synccheck",
            SanitizerTool::Racecheck => "racecheck",
        }
    }
}

/// One distinct finding: identical reports (initcheck prints one per thread) are counted, not repeated.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Finding {
    /// The record's kind as the tool names it (`Initcheck`, `Synccheck`, `Analysis` for a race, …).
    pub kind: String,
    /// What it says (`Uninitialized __global__ memory read of size 4 bytes`, `Race condition:
    /// Write at planted.cu:22 and Read at planted.cu:24`).
    pub what: String,
    /// The kernel it happened in, as the tool names it.
    pub kernel: String,
    /// `file:line` (file name only), when the kernel was compiled with line information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// `Error` or `Warning` where the tool grades it (racecheck).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// How many identical reports it stands for.
    pub reports: u64,
    /// Hazards counted (racecheck's analysis), when the tool counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazards: Option<u64>,
}

/// One tool over several variants' jobs in one sanitized child, before its findings are shared
/// out among them (scheduler/sanitize_batch.rs).
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRun {
    /// The tool's answer over the whole child, as one record: every job's findings, the total,
    /// the seconds, the files, or why it could not answer.
    pub record: SanitizeRecord,
    /// Whether the tool's XML report was read: its findings are all it found up to the child's end.
    pub report_read: bool,
    /// How many of the jobs, in order, the child finished (the next one was running when it stopped).
    pub completed: usize,
}

/// One tool over one variant (at one job of its sweep).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SanitizeRecord {
    pub job_id: String,
    /// The variant's label: its name and own parameters (`smem[BLOCK=128]`).
    pub variant: String,
    pub group: String,
    pub tool: SanitizerTool,
    pub findings: Vec<Finding>,
    /// The tool's own total (`ERROR SUMMARY: N errors`, racecheck's `N hazards displayed`):
    /// it counts every report, also those past its print limit that the findings do not list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors_reported: Option<u64>,
    /// Why the tool did not run the variant (racecheck where it uses no shared memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Why there is no answer (the sanitizer could not run, timed out, wrote no readable file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the sanitized child, launch of compute-sanitizer to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// The tool's XML file and the log of its run, relative to the run directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_file: Option<String>,
    /// How many variants shared the sanitized child (`--sanitize` runs a suite's variants in one
    /// child per tool): `seconds`, the XML file and the log are that whole child's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_of: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
    /// Set where a mock executor stood in: nothing was sanitized.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mock: bool,
}

impl SanitizeRecord {
    /// A record of `tool` over the job `job_id` (`variant` at `group`), with nothing found yet.
    pub fn new(job_id: &str, variant: &str, group: &str, tool: SanitizerTool) -> Self {
        SanitizeRecord {
            job_id: job_id.into(),
            variant: variant.into(),
            group: group.into(),
            tool,
            findings: Vec::new(),
            errors_reported: None,
            skipped: None,
            error: None,
            seconds: None,
            report_file: None,
            batch_of: None,
            log_file: None,
            mock: false,
        }
    }

    /// The same record, failed for `why`.
    pub fn failed(self, why: String) -> Self {
        SanitizeRecord {
            error: Some(why),
            ..self
        }
    }

    /// The tool's own notices that it cannot check what the variant does ("CUDA Dynamic
    /// Parallelism is not supported by the selected tool") are no finding about the code: they
    /// become the record's `skipped` reason, and the count of reports leaves them out.
    pub fn unsupported_as_skipped(mut self) -> Self {
        let (unsupported, findings): (Vec<Finding>, Vec<Finding>) = self
            .findings
            .into_iter()
            .partition(|f| f.what.contains("is not supported by the selected tool"));
        self.findings = findings;
        if let Some(first) = unsupported.first() {
            let reports: u64 = unsupported.iter().map(|f| f.reports).sum();
            self.errors_reported = self.errors_reported.map(|n| n.saturating_sub(reports));
            self.skipped = Some(format!(
                "{} says: {}",
                self.tool.as_str(),
                first.what.trim_start_matches("Warning: ")
            ));
        }
        self
    }

    /// The tool found something: the variant fails as a wrong result does.
    pub fn found_something(&self) -> bool {
        !self.findings.is_empty() || self.errors_reported.is_some_and(|n| n > 0)
    }

    /// The variant fails: a finding, or no answer from the tool.
    pub fn fails(&self) -> bool {
        self.found_something() || self.error.is_some()
    }

    /// One line: `clean`, `skipped: why`, `2 findings (4096 reports)`, `error: why`.
    pub fn verdict(&self) -> String {
        if let Some(e) = &self.error {
            return format!("error: {}", e.lines().next().unwrap_or(""));
        }
        if let Some(s) = &self.skipped {
            return format!("skipped: {s}");
        }
        if !self.found_something() {
            return if self.mock {
                "clean (MOCK: nothing was sanitized)".into()
            } else {
                "clean".into()
            };
        }
        let reports: u64 = self.findings.iter().map(|f| f.reports).sum();
        let total = self.errors_reported.unwrap_or(reports).max(reports);
        let n = self.findings.len();
        format!(
            "{n} finding{} ({total} report{})",
            if n == 1 { "" } else { "s" },
            if total == 1 { "" } else { "s" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_fails_on_a_finding_a_reported_total_or_an_error_and_says_which() {
        let clean = SanitizeRecord::new("v @ g", "v", "g", SanitizerTool::Memcheck);
        assert!(!clean.fails());
        assert_eq!(clean.verdict(), "clean");
        let mut found = clean.clone();
        found.findings.push(Finding {
            kind: "Initcheck".into(),
            what: "Uninitialized __global__ memory read of size 4 bytes".into(),
            kernel: "uninit_read".into(),
            reports: 20,
            ..Default::default()
        });
        found.errors_reported = Some(1_048_576);
        assert!(found.fails());
        assert_eq!(found.verdict(), "1 finding (1048576 reports)");
        let counted_only = SanitizeRecord {
            errors_reported: Some(3),
            ..clean.clone()
        };
        assert!(
            counted_only.fails(),
            "a total past the print limit still counts"
        );
        let broken = clean.clone().failed("no XML\nmore".into());
        assert!(broken.fails() && !broken.found_something());
        assert_eq!(broken.verdict(), "error: no XML");
        let skipped = SanitizeRecord {
            skipped: Some("no shared memory".into()),
            ..clean
        };
        assert!(!skipped.fails());
    }

    #[test]
    fn a_record_reads_back_what_it_wrote_and_tools_are_lowercase() {
        let r = SanitizeRecord::new("a", "a", "", SanitizerTool::Racecheck);
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""tool":"racecheck""#), "{text}");
        assert_eq!(serde_json::from_str::<SanitizeRecord>(&text).unwrap(), r);
    }

    #[test]
    fn a_tool_that_cannot_check_a_feature_skips_instead_of_failing() {
        let record = SanitizeRecord {
            findings: vec![Finding {
                kind: "Sanitizer".into(),
                what: "Warning: CUDA Dynamic Parallelism is not supported by the selected tool"
                    .into(),
                kernel: String::new(),
                location: None,
                level: Some("Warning".into()),
                reports: 1,
                hazards: None,
            }],
            errors_reported: Some(1),
            ..SanitizeRecord::new("j @ N=1", "j", "N=1", SanitizerTool::Initcheck)
        }
        .unsupported_as_skipped();
        assert!(!record.fails(), "{record:?}");
        assert_eq!(
            record.skipped.as_deref(),
            Some("initcheck says: CUDA Dynamic Parallelism is not supported by the selected tool")
        );
    }
}
