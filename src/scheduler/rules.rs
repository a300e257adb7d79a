//! The scheduler's decision rules, pure: the order timing tasks run in, which work a lane tries next, when a task needs the host alone, what each step is called, and the exit code a run ends with.

use crate::exit;
use crate::records::{JobStatus, ProfileRecord};

/// One timing task: a job of a group of a suite, in one round (indices into the run's suites,
/// a suite's groups, and a group's jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    pub suite: usize,
    pub group: usize,
    pub round: u32,
    pub job: usize,
}

/// What the order of a suite's timing tasks depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteShape {
    /// Whether some job of it crosses the host link (its bounds then measure the link too).
    pub host_link: bool,
    /// `--rounds` (0 counts as 1).
    pub rounds: u32,
    /// Each group's number of jobs, in group order.
    pub group_sizes: Vec<usize>,
}

impl SuiteShape {
    /// Timing tasks of each group: a task per job and round.
    pub fn tasks_per_group(&self) -> Vec<usize> {
        self.group_sizes
            .iter()
            .map(|&jobs| jobs * self.rounds.max(1) as usize)
            .collect()
    }
}

/// Every timing task, in the order handed out: by suite, group, round, then job, so rounds
/// interleave the variants (A B C A B C …) and drift hits all of them alike. On several GPUs,
/// suites that time the host link go first: their tasks take the host alone, and at the start no
/// other GPU is in an ncu pass that they would wait out. (One GPU keeps the suites' order, and
/// with it the conditions its earlier runs were timed in.)
pub fn timing_tasks(suites: &[SuiteShape], several_gpus: bool) -> Vec<Task> {
    let mut order: Vec<usize> = (0..suites.len()).collect();
    if several_gpus {
        order.sort_by_key(|&si| !suites[si].host_link);
    }
    let mut tasks = Vec::new();
    for si in order {
        let shape = &suites[si];
        for (gi, &jobs) in shape.group_sizes.iter().enumerate() {
            for round in 0..shape.rounds.max(1) {
                tasks.extend((0..jobs).map(|ji| Task {
                    suite: si,
                    group: gi,
                    round,
                    job: ji,
                }));
            }
        }
    }
    tasks
}

/// Whether a timing task needs the host to itself: its job crosses the host link, or it is the
/// lane's first of a group whose bounds (measured before it, on the lane's GPU) time the link.
pub fn needs_host_alone(
    job_crosses_host_link: bool,
    suite_times_host_link: bool,
    bounds_measured: bool,
) -> bool {
    job_crosses_host_link || (suite_times_host_link && !bounds_measured)
}

/// Where the queue stands when a lane looks for work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queue {
    /// Whether the run has several lanes (GPUs).
    pub several_gpus: bool,
    /// Whether the next timing task needs the host alone; `None` when every task is handed out.
    pub next_task_alone: Option<bool>,
    /// Whether an ncu pass is ready to run.
    pub pass_ready: bool,
    /// Groups of every suite not yet fully timed.
    pub groups_timing: usize,
}

impl Queue {
    /// Whether the lane tries a ready pass before the next timing task. On one GPU every job is
    /// timed before the first pass: jobs timed right after a profile pass drifted by up to 6%
    /// against a run without ncu, while the group timed before any pass agreed within 0.4%
    /// (transpose, H100: noise-h100 against rounds-h100, docs/design-notes.md).
    /// On several GPUs a pass runs beside the other GPUs' timing, unless the next task needs the
    /// host alone: a pass started now would hold it up.
    pub fn pass_first(&self) -> bool {
        self.pass_ready
            && match self.next_task_alone {
                None => true,
                Some(alone) => self.several_gpus && !alone,
            }
    }

    /// Whether the lane's work is over: every group is timed and no pass waits to run.
    pub fn lane_done(&self) -> bool {
        self.groups_timing == 0 && !self.pass_ready
    }
}

/// The tag of a lane's bounds of a group: each lane's own file names in the shared work
/// directory when there are several.
pub fn bounds_tag(group: usize, lane: usize, several_gpus: bool) -> String {
    if several_gpus {
        format!("{group}-gpu{lane}")
    } else {
        group.to_string()
    }
}

/// The tag of one round of a job: its files in the work directory and its kept log.
pub fn job_tag(group: usize, job: usize, round: u32) -> String {
    if round == 0 {
        format!("job-{group}-{job}")
    } else {
        format!("job-{group}-{job}-r{round}")
    }
}

/// The tag of a group's ncu pass (one per group: a second session would only queue behind the first).
pub fn pass_tag(group: usize) -> String {
    format!("profile-{group}")
}

/// The seed of a round's inputs: each round draws its own, seed, seed + 1 (the second check),
/// seed + 2, …
pub fn round_seed(seed: u64, round: u32) -> u64 {
    seed.wrapping_add(2 * round as u64)
}

/// What the progress bar says while a job is timed.
pub fn job_message(group: &str, label: &str, round: u32, rounds: u32) -> String {
    format!(
        "{group}: {label}{}",
        if rounds > 1 {
            format!(" (round {}/{rounds})", round + 1)
        } else {
            String::new()
        }
    )
}

/// Whether a timed job goes into its group's ncu pass: not if it failed or timed out.
pub fn worth_profiling(status: JobStatus) -> bool {
    status != JobStatus::Failed && status != JobStatus::TimedOut
}

/// Whether a pass's record makes its suite end as failed: an error, or metrics missing.
pub fn profile_failed(record: &ProfileRecord) -> bool {
    record.error.is_some() || !record.missing.is_empty()
}

/// A finished suite's exit code: `exit::JOBS_FAILED` when some job failed, was wrong or went unprofiled.
pub fn suite_exit_code(statuses: impl IntoIterator<Item = JobStatus>, pass_failed: bool) -> i32 {
    let wrong = statuses.into_iter().any(|s| s != JobStatus::Ok);
    if wrong || pass_failed {
        exit::JOBS_FAILED
    } else {
        exit::OK
    }
}

/// A run's exit code: the worst of its finished suites'.
pub fn run_exit_code(codes: &[Option<i32>]) -> i32 {
    codes.iter().flatten().copied().max().unwrap_or(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(host_link: bool, rounds: u32, group_sizes: &[usize]) -> SuiteShape {
        SuiteShape {
            host_link,
            rounds,
            group_sizes: group_sizes.to_vec(),
        }
    }

    fn tuples(tasks: &[Task]) -> Vec<(usize, usize, u32, usize)> {
        tasks
            .iter()
            .map(|t| (t.suite, t.group, t.round, t.job))
            .collect()
    }

    #[test]
    fn rounds_interleave_the_variants_of_a_group() {
        let tasks = timing_tasks(&[shape(false, 2, &[2, 1])], false);
        assert_eq!(
            tuples(&tasks),
            [
                (0, 0, 0, 0),
                (0, 0, 0, 1),
                (0, 0, 1, 0),
                (0, 0, 1, 1),
                (0, 1, 0, 0),
                (0, 1, 1, 0)
            ]
        );
        assert_eq!(shape(false, 2, &[2, 1]).tasks_per_group(), [4, 2]);
        // No rounds asked for is one round.
        assert_eq!(timing_tasks(&[shape(false, 0, &[2])], false).len(), 2);
        assert_eq!(shape(false, 0, &[2]).tasks_per_group(), [2]);
    }

    #[test]
    fn host_link_suites_go_first_on_several_gpus_only() {
        let suites = [
            shape(false, 1, &[1]),
            shape(true, 1, &[1]),
            shape(false, 1, &[1]),
            shape(true, 1, &[1]),
        ];
        let suite_order = |several| -> Vec<usize> {
            timing_tasks(&suites, several)
                .iter()
                .map(|t| t.suite)
                .collect()
        };
        assert_eq!(suite_order(true), [1, 3, 0, 2], "stable among equals");
        assert_eq!(suite_order(false), [0, 1, 2, 3]);
    }

    #[test]
    fn a_task_needs_the_host_alone_for_the_link_or_its_groups_first_link_bounds() {
        assert!(needs_host_alone(true, true, true));
        assert!(needs_host_alone(false, true, false));
        assert!(!needs_host_alone(false, true, true));
        assert!(!needs_host_alone(false, false, false));
    }

    #[test]
    fn one_gpu_profiles_only_when_every_task_is_handed_out() {
        let q = |several_gpus, next_task_alone, pass_ready| Queue {
            several_gpus,
            next_task_alone,
            pass_ready,
            groups_timing: 1,
        };
        assert!(!q(false, Some(false), true).pass_first());
        assert!(q(false, None, true).pass_first());
        assert!(q(true, Some(false), true).pass_first());
        assert!(
            !q(true, Some(true), true).pass_first(),
            "the pass would hold up a task that needs the host alone"
        );
        assert!(!q(true, None, false).pass_first(), "no pass is ready");
    }

    #[test]
    fn a_lane_is_done_when_every_group_is_timed_and_no_pass_waits() {
        let q = |groups_timing, pass_ready| Queue {
            several_gpus: true,
            next_task_alone: None,
            pass_ready,
            groups_timing,
        };
        assert!(q(0, false).lane_done());
        assert!(!q(0, true).lane_done());
        assert!(!q(1, false).lane_done());
    }

    #[test]
    fn steps_are_tagged_by_group_job_round_and_lane() {
        assert_eq!(bounds_tag(3, 1, true), "3-gpu1");
        assert_eq!(bounds_tag(3, 0, false), "3");
        assert_eq!(job_tag(2, 5, 0), "job-2-5");
        assert_eq!(job_tag(2, 5, 3), "job-2-5-r3");
        assert_eq!(pass_tag(4), "profile-4");
        assert_eq!(round_seed(7, 0), 7);
        assert_eq!(round_seed(7, 2), 11);
        assert_eq!(round_seed(u64::MAX, 1), 1, "wraps");
        assert_eq!(job_message("g", "a", 0, 1), "g: a");
        assert_eq!(job_message("g", "a", 1, 3), "g: a (round 2/3)");
    }

    #[test]
    fn exit_codes_say_whether_some_job_or_pass_went_wrong() {
        assert_eq!(
            suite_exit_code([JobStatus::Ok, JobStatus::Ok], false),
            exit::OK
        );
        assert_eq!(suite_exit_code([JobStatus::Ok], true), exit::JOBS_FAILED);
        assert_eq!(
            suite_exit_code([JobStatus::Ok, JobStatus::Wrong], false),
            exit::JOBS_FAILED
        );
        assert_eq!(run_exit_code(&[]), exit::OK);
        assert_eq!(
            run_exit_code(&[Some(exit::OK), None, Some(exit::JOBS_FAILED)]),
            exit::JOBS_FAILED
        );
        assert!(worth_profiling(JobStatus::Ok) && worth_profiling(JobStatus::Wrong));
        assert!(!worth_profiling(JobStatus::Failed) && !worth_profiling(JobStatus::TimedOut));
        let mut record = ProfileRecord {
            job_id: "a".into(),
            metrics: Default::default(),
            missing: Vec::new(),
            kernels: Vec::new(),
            passes: None,
            report_file: None,
            error: None,
            not_applicable: Default::default(),
            gpu: None,
            duration_from: None,
            profiler: None,
            hotspots: None,
        };
        assert!(!profile_failed(&record));
        record.missing.push("dram__bytes".into());
        assert!(profile_failed(&record));
        record.missing.clear();
        record.error = Some("ncu failed".into());
        assert!(profile_failed(&record));
    }
}
