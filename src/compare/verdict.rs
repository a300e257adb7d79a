//! A compared job's verdict, and the words the verdict reports use for verdicts and job statuses.

use serde::Serialize;

use crate::records::JobStatus;

/// In report order: what needs attention first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Regressed,
    Improved,
    New,
    Missing,
    Same,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regressed => "Regressed",
            Verdict::Improved => "Improved",
            Verdict::New => "New",
            Verdict::Missing => "Missing",
            Verdict::Same => "Same",
        }
    }
}

pub(super) fn status_word(s: JobStatus) -> &'static str {
    match s {
        JobStatus::Ok => "correct",
        JobStatus::Wrong => "wrong",
        JobStatus::Failed => "failed",
        JobStatus::TimedOut => "timed out",
    }
}
