//! From history rows to what `gpu-lab history` shows (each job's median and interval run after run, for one fingerprint) and to the runs `check --baseline last:K` judges against (pure).

use std::collections::BTreeMap;

use super::row::{HistoryRow, Measure};

/// One run's value of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendPoint {
    pub run_id: String,
    pub started: String,
    pub commit: Option<String>,
    pub dirty: bool,
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n: usize,
}

impl TrendPoint {
    /// The commit's first 12 characters (`+` when the tree was dirty), or `unknown`.
    pub fn commit_label(&self) -> String {
        match &self.commit {
            Some(c) => format!(
                "{}{}",
                c.chars().take(12).collect::<String>(),
                if self.dirty { "+" } else { "" }
            ),
            None => "unknown".into(),
        }
    }
}

/// One job's values over the runs, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub job_id: String,
    pub label: String,
    pub group: String,
    pub points: Vec<TrendPoint>,
}

impl Trend {
    /// The last point's median over the first's, as a signed percentage.
    pub fn change_pct(&self, point: &TrendPoint) -> Option<f64> {
        let first = self.points.first()?.median;
        (first > 0.0).then(|| (point.median / first - 1.0) * 100.0)
    }
}

/// The trends of one suite on one fingerprint, for one measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Trends {
    pub suite: String,
    pub fingerprint: String,
    /// [`super::row::EnvFingerprint::describe`] of the runs.
    pub environment: String,
    pub mock: bool,
    /// The runs were timed L2 warm (a fingerprint holds one L2 state).
    pub warm: bool,
    pub measure: Measure,
    /// The runs shown, oldest first.
    pub runs: Vec<String>,
    pub trends: Vec<Trend>,
}

/// What `gpu-lab history` selects.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection<'a> {
    pub fingerprint: &'a str,
    pub measure: Measure,
    /// Only these variants (empty: all).
    pub variants: &'a [String],
    /// Only runs started at or after this RFC 3339 prefix (`2026-11-25` or a full time).
    pub since: Option<&'a str>,
}

/// Run ids in time order (start time, then id), each once.
fn runs_in_order<'a>(rows: impl Iterator<Item = &'a HistoryRow>) -> Vec<String> {
    let mut runs: Vec<(&str, &str)> = rows
        .map(|r| (r.started.as_str(), r.run_id.as_str()))
        .collect();
    runs.sort();
    runs.dedup();
    runs.into_iter().map(|(_, id)| id.to_string()).collect()
}

/// The trends of `rows` (one suite's) that `sel` selects.
pub fn trends(rows: &[HistoryRow], sel: &Selection) -> Trends {
    let chosen: Vec<&HistoryRow> = rows
        .iter()
        .filter(|r| r.fingerprint == sel.fingerprint && r.measure == sel.measure)
        .filter(|r| sel.variants.is_empty() || sel.variants.contains(&r.variant))
        .filter(|r| sel.since.is_none_or(|s| r.started.as_str() >= s))
        .collect();
    let runs = runs_in_order(chosen.iter().copied());
    let order: BTreeMap<&str, usize> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.as_str(), i))
        .collect();
    let mut by_job: Vec<Trend> = Vec::new();
    let mut at: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &chosen {
        let i = *at.entry(r.job_id.as_str()).or_insert_with(|| {
            by_job.push(Trend {
                job_id: r.job_id.clone(),
                label: r.label.clone(),
                group: r.group.clone(),
                points: Vec::new(),
            });
            by_job.len() - 1
        });
        by_job[i].points.push(TrendPoint {
            run_id: r.run_id.clone(),
            started: r.started.clone(),
            commit: r.commit.clone(),
            dirty: r.dirty,
            median: r.median,
            ci_low: r.ci_low,
            ci_high: r.ci_high,
            n: r.samples.len(),
        });
    }
    for t in &mut by_job {
        t.points
            .sort_by_key(|p| order.get(p.run_id.as_str()).copied());
        // A run appended twice (the same id) counts once: its last row wins.
        t.points.dedup_by(|later, earlier| {
            let same = later.run_id == earlier.run_id;
            if same {
                *earlier = later.clone();
            }
            same
        });
    }
    by_job.sort_by(|a, b| (&a.group, &a.label).cmp(&(&b.group, &b.label)));
    let first = chosen.first();
    Trends {
        suite: first.map(|r| r.suite.clone()).unwrap_or_default(),
        fingerprint: sel.fingerprint.to_string(),
        environment: first
            .map(|r| super::row::EnvFingerprint::of_row(r).describe())
            .unwrap_or_default(),
        mock: first.is_some_and(|r| r.mock),
        warm: first.is_some_and(|r| r.cache == "warm"),
        measure: sel.measure,
        runs,
        trends: by_job,
    }
}

/// The last `k` runs of `fingerprint` in `rows`, oldest first, leaving out `except` (the run
/// being judged, which may already be in the history).
pub fn last_runs(rows: &[HistoryRow], fingerprint: &str, k: usize, except: &str) -> Vec<String> {
    let mut runs = runs_in_order(
        rows.iter()
            .filter(|r| r.fingerprint == fingerprint && r.run_id != except),
    );
    let skip = runs.len().saturating_sub(k);
    runs.drain(..skip);
    runs
}

/// Each fingerprint in `rows` with its newest run's start and its number of runs, newest first.
pub fn fingerprints(rows: &[HistoryRow]) -> Vec<(String, String, usize)> {
    let mut by: BTreeMap<&str, (String, Vec<&str>, String)> = BTreeMap::new();
    for r in rows {
        let e = by.entry(r.fingerprint.as_str()).or_insert_with(|| {
            (
                String::new(),
                Vec::new(),
                super::row::EnvFingerprint::of_row(r).describe(),
            )
        });
        if r.started > e.0 {
            e.0 = r.started.clone();
        }
        if !e.1.contains(&r.run_id.as_str()) {
            e.1.push(&r.run_id);
        }
    }
    let mut out: Vec<(String, String, usize, String)> = by
        .into_iter()
        .map(|(k, (newest, runs, env))| (k.to_string(), newest, runs.len(), env))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1));
    out.into_iter().map(|(k, _, n, env)| (k, env, n)).collect()
}
