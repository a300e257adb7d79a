//! `run.json`: what a run was, on which GPU and how it was timed, and which shard of a plan it holds (stored format).

use serde::{Deserialize, Serialize};

use super::environment::DeviceInfo;
use super::outcome::TimingConfig;
use crate::metrics::MetricDef;

/// The run's environment fingerprint and configuration (`run.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    pub gpu_lab_version: String,
    /// The build that made the run: its git commit and the binary's sha256 (absent in runs made
    /// before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildInfo>,
    pub command: String,
    pub started: String,
    pub finished: Option<String>,
    pub suite: String,
    pub suite_description: String,
    pub suite_source_hash: String,
    pub device: Option<DeviceInfo>,
    /// Why there is no device information, when there is none.
    pub nvml_error: Option<String>,
    pub ncu_version: Option<String>,
    /// `none` (clocks as found) unless the owner asked otherwise.
    pub clock_policy: String,
    pub timing: TimingConfig,
    /// L2 state during timing: repeated launches over the same buffers keep them warm.
    pub cache_state: String,
    pub seed: u64,
    pub metrics: Vec<MetricDef>,
    /// Metrics asked for that this GPU cannot collect, with why (checked against `ncu --query-metrics`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable_metrics: Vec<String>,
    pub wall_seconds: Option<f64>,
    /// Made by the mock executor (`--mock-gpu`): no GPU ran, every number is a stand-in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mock: bool,
    /// The shard of a plan this run holds (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// For a run made by `gpu-lab merge`: the shard runs it joins (directory names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    /// For a run over several GPUs of one host (`--gpus`): each of them; `device` is the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<DeviceInfo>,
}

impl RunInfo {
    /// The GPU's name as the reports print it; `unknown GPU` for a run that recorded no device.
    pub fn gpu_name(&self) -> &str {
        self.device
            .as_ref()
            .map_or("unknown GPU", |d| d.name.as_str())
    }
}

/// Which build of gpu-lab made a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct BuildInfo {
    /// The git commit it was built from (absent when built outside a checkout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The checkout had changes to tracked files that the commit does not hold.
    #[serde(default)]
    pub dirty: bool,
    /// sha256 of the executable that ran (absent when it could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_sha256: Option<String>,
}

impl BuildInfo {
    /// `commit 0123456789ab (with uncommitted changes), binary sha256 0123456789abcdef`.
    pub fn describe(&self) -> String {
        let commit = match &self.commit {
            Some(c) => format!(
                "commit {}{}",
                c.chars().take(12).collect::<String>(),
                if self.dirty {
                    " (with uncommitted changes)"
                } else {
                    ""
                }
            ),
            None => "no commit (built outside a git checkout)".into(),
        };
        match &self.binary_sha256 {
            Some(h) => format!(
                "{commit}, binary sha256 {}",
                h.chars().take(16).collect::<String>()
            ),
            None => commit,
        }
    }

    /// Two builds that cannot be the same code: other commits, other binaries, or a dirty tree.
    pub fn differs_from(&self, other: &BuildInfo) -> bool {
        let both =
            |a: &Option<String>, b: &Option<String>| matches!((a, b), (Some(x), Some(y)) if x != y);
        both(&self.commit, &other.commit)
            || both(&self.binary_sha256, &other.binary_sha256)
            || (self.commit == other.commit && self.dirty != other.dirty)
    }
}

/// Which shard of which plan a run is, and its identity: `merge` refuses a copy of one shard
/// relabelled as another by these.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ShardInfo {
    pub index: usize,
    pub count: usize,
    /// sha256 over every job of the plan before it was split: shards of one plan share it.
    pub plan: String,
    /// A random id of this shard's invocation: two shard runs never share one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_id: String,
    /// The jobs this shard owns, each as the plan hash names it (`source hash\0suite\0job id`):
    /// the shards' sets are disjoint and together hash to `plan`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
}

/// The key of a job in a plan's hash and a shard's `jobs`.
pub fn plan_job_key(source_hash: &str, suite: &str, id: &str) -> String {
    format!("{source_hash}\u{0}{suite}\u{0}{id}")
}

/// The plan hash over every job key (sorted here): what `ShardInfo::plan` holds.
pub fn plan_hash<'a>(keys: impl IntoIterator<Item = &'a String>) -> String {
    use sha2::{Digest, Sha256};
    let mut keys: Vec<&String> = keys.into_iter().collect();
    keys.sort();
    let mut h = Sha256::new();
    for k in keys {
        h.update(k.as_bytes());
        h.update([1u8]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(commit: Option<&str>, dirty: bool, sha: Option<&str>) -> BuildInfo {
        BuildInfo {
            commit: commit.map(str::to_string),
            dirty,
            binary_sha256: sha.map(str::to_string),
        }
    }

    #[test]
    fn a_build_names_its_commit_its_state_and_its_binary() {
        let b = build(
            Some("0123456789abcdef0123"),
            true,
            Some("ffeeddccbbaa99887766"),
        );
        assert_eq!(
            b.describe(),
            "commit 0123456789ab (with uncommitted changes), binary sha256 ffeeddccbbaa9988"
        );
        assert_eq!(
            build(None, false, None).describe(),
            "no commit (built outside a git checkout)"
        );
    }

    #[test]
    fn builds_differ_by_commit_binary_or_dirty_tree_and_not_by_what_is_unknown() {
        let a = build(Some("c1"), false, Some("s1"));
        assert!(!a.differs_from(&a.clone()));
        assert!(a.differs_from(&build(Some("c2"), false, Some("s1"))));
        assert!(a.differs_from(&build(Some("c1"), false, Some("s2"))));
        assert!(a.differs_from(&build(Some("c1"), true, Some("s1"))));
        assert!(!a.differs_from(&build(Some("c1"), false, None)));
    }
}
