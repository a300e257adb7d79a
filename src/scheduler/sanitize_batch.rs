//! One sanitized child for many variants (pure): what its answer says of each job (a finding belongs to the jobs that launch its kernel): clean, to be sanitized alone, or to go into the next batch.

use std::collections::{BTreeSet, VecDeque};

use crate::cxx::base_name;
use crate::profiler::assign::reported_base_name;
use crate::records::{BatchRun, SanitizeRecord};
use crate::sanitizer::PRINT_LIMIT;
use crate::suite::JobSpec;

/// The base names of the kernels a job launches (a host program's kernel steps launch these too).
fn kernels(job: &JobSpec) -> BTreeSet<String> {
    job.launches.iter().map(|l| base_name(&l.kernel)).collect()
}

/// What a batch's answer says of its jobs (indices into the batch, in order).
#[derive(Debug, Default, PartialEq)]
pub struct Shares {
    /// Finished by the child with nothing found: clean.
    pub clean: Vec<usize>,
    /// Found something, was running when the child stopped, or cannot be told apart: sanitized
    /// again alone, for a record of its own exactly as without batching.
    pub alone: Vec<usize>,
    /// Never reached, or reached after the tool stopped printing: the next batch.
    pub again: Vec<usize>,
}

/// Shares a batch's answer out among its jobs. A finding is laid to every job launching its
/// kernel (variants of one kernel are told apart by sanitizing them alone). Trusted are the jobs
/// the child finished, up to the first with a finding where the report may have been cut at the
/// print limit; where the report is unread, a finding names no job's kernel, or the tool said it
/// cannot check something (which job's?), every job is sanitized alone.
pub fn share_out(jobs: &[&JobSpec], run: &BatchRun) -> Shares {
    let all_alone = || Shares {
        alone: (0..jobs.len()).collect(),
        ..Shares::default()
    };
    if !run.report_read || run.record.skipped.is_some() {
        return all_alone();
    }
    let launched: Vec<BTreeSet<String>> = jobs.iter().map(|j| kernels(j)).collect();
    let mut flagged: BTreeSet<usize> = BTreeSet::new();
    let mut dropped = false;
    for f in &run.record.findings {
        // The tool's own word that it dropped reports (its error buffer overflowed): the report
        // is cut, as at the print limit.
        if f.kernel.is_empty() && f.what.contains("records have been dropped") {
            dropped = true;
            continue;
        }
        let base = reported_base_name(&f.kernel);
        let owners: Vec<usize> = (0..jobs.len())
            .filter(|&i| launched[i].contains(&base))
            .collect();
        if owners.is_empty() {
            return all_alone();
        }
        flagged.extend(owners);
    }
    let shown: u64 = run.record.findings.iter().map(|f| f.reports).sum();
    let cut = dropped
        || shown >= u64::from(PRINT_LIMIT)
        || run
            .record
            .errors_reported
            .is_some_and(|total| total > shown);
    let mut trusted = run.completed.min(jobs.len());
    if cut {
        // Reports the XML does not hold, and no job to lay them to: none can be called clean.
        let Some(&first) = flagged.first() else {
            return all_alone();
        };
        trusted = trusted.min(first);
    }
    let mut shares = Shares::default();
    for i in 0..jobs.len() {
        if i < trusted && !flagged.contains(&i) {
            shares.clean.push(i);
        } else if i <= trusted {
            shares.alone.push(i);
        } else {
            shares.again.push(i);
        }
    }
    shares
}

/// How one job's record under a tool comes about.
#[derive(Debug, PartialEq)]
pub enum Settled {
    /// Clean in a batch: its record, made from the batch's.
    Clean(Box<SanitizeRecord>),
    /// To be sanitized alone: the job's index.
    Alone(usize),
}

/// Settles the `checked` jobs (indices into `jobs`) under one tool: batches through
/// `sanitize_batch` (given the batch's number and its jobs) until every job is clean or handed to
/// `settled` to run alone. Each round settles at least the job its child stopped at, so it ends.
pub fn settle(
    jobs: &[&JobSpec],
    checked: Vec<usize>,
    mut sanitize_batch: impl FnMut(usize, &[&JobSpec]) -> BatchRun,
    mut settled: impl FnMut(Settled) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut queue: VecDeque<Vec<usize>> = VecDeque::from([checked]);
    let mut runs = 0;
    while let Some(batch) = queue.pop_front() {
        match batch[..] {
            [] => continue,
            [i] => {
                settled(Settled::Alone(i))?;
                continue;
            }
            _ => {}
        }
        let members: Vec<&JobSpec> = batch.iter().map(|&i| jobs[i]).collect();
        let run = sanitize_batch(runs, &members);
        runs += 1;
        let shares = share_out(&members, &run);
        for k in shares.clean {
            settled(Settled::Clean(Box::new(clean_record(
                members[k],
                &run.record,
            ))))?;
        }
        for k in shares.alone {
            settled(Settled::Alone(batch[k]))?;
        }
        if !shares.again.is_empty() {
            queue.push_front(shares.again.iter().map(|&k| batch[k]).collect());
        }
    }
    Ok(())
}

/// A job's clean record from its batch's: nothing found; the batch's seconds, files and size.
fn clean_record(job: &JobSpec, batch: &SanitizeRecord) -> SanitizeRecord {
    SanitizeRecord {
        job_id: job.id().into(),
        variant: job.label(),
        group: job.key.group.clone(),
        findings: Vec::new(),
        errors_reported: Some(0),
        error: None,
        skipped: None,
        ..batch.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Finding, SanitizerTool};
    use crate::suite::LaunchSpec;

    fn job(kernels: &[&str]) -> JobSpec {
        let mut job = crate::profiler::assign::tests::job("v", 1);
        let launch: LaunchSpec = job.launches[0].clone();
        job.launches = kernels
            .iter()
            .map(|k| LaunchSpec {
                kernel: (*k).into(),
                ..launch.clone()
            })
            .collect();
        job
    }

    fn finding(kernel: &str, reports: u64) -> Finding {
        Finding {
            kind: "Error".into(),
            what: "Invalid __global__ write of size 4 bytes".into(),
            kernel: kernel.into(),
            reports,
            ..Finding::default()
        }
    }

    fn run(findings: Vec<Finding>, total: u64, completed: usize) -> BatchRun {
        BatchRun {
            record: SanitizeRecord {
                findings,
                errors_reported: Some(total),
                ..SanitizeRecord::new("b", "", "", SanitizerTool::Memcheck)
            },
            report_read: true,
            completed,
        }
    }

    #[test]
    fn a_finding_in_a_kernel_two_jobs_launch_sends_both_alone() {
        let jobs = [
            job(&["copy"]),
            job(&["scale", "add"]),
            job(&["ns::copy<float>"]),
        ];
        let jobs: Vec<&JobSpec> = jobs.iter().collect();
        assert_eq!(
            share_out(
                &jobs,
                &run(vec![finding("void ns::copy<float>(float*)", 1)], 1, 3)
            ),
            Shares {
                clean: vec![1],
                alone: vec![0, 2],
                again: vec![],
            }
        );
    }

    #[test]
    fn a_finished_batch_is_clean_but_for_the_jobs_its_findings_name() {
        let jobs = [job(&["a"]), job(&["b"]), job(&["c"])];
        let jobs: Vec<&JobSpec> = jobs.iter().collect();
        assert_eq!(
            share_out(&jobs, &run(Vec::new(), 0, 3)),
            Shares {
                clean: vec![0, 1, 2],
                ..Shares::default()
            }
        );
        assert_eq!(
            share_out(&jobs, &run(vec![finding("void b(float*)", 2)], 2, 3)),
            Shares {
                clean: vec![0, 2],
                alone: vec![1],
                again: vec![],
            }
        );
    }

    #[test]
    fn a_child_that_stopped_leaves_the_running_job_alone_and_the_rest_for_another_batch() {
        let jobs = [job(&["a"]), job(&["b"]), job(&["c"]), job(&["d"])];
        let jobs: Vec<&JobSpec> = jobs.iter().collect();
        // memcheck ended the context in b: a finished, c and d never ran.
        assert_eq!(
            share_out(&jobs, &run(vec![finding("b", 1)], 1, 1)),
            Shares {
                clean: vec![0],
                alone: vec![1],
                again: vec![2, 3],
            }
        );
        // Died in c with nothing said: c alone (its own record says why), d again.
        let mut died = run(Vec::new(), 0, 2);
        died.record.error = Some("the sanitized child exited with 1".into());
        assert_eq!(
            share_out(&jobs, &died),
            Shares {
                clean: vec![0, 1],
                alone: vec![2],
                again: vec![3],
            }
        );
    }

    #[test]
    fn a_report_cut_at_the_print_limit_trusts_nothing_after_its_first_finding() {
        let jobs = [job(&["a"]), job(&["b"]), job(&["c"])];
        let jobs: Vec<&JobSpec> = jobs.iter().collect();
        let cut = run(vec![finding("b", 100)], 1_048_576, 3);
        assert_eq!(
            share_out(&jobs, &cut),
            Shares {
                clean: vec![0],
                alone: vec![1],
                again: vec![2],
            }
        );
    }

    #[test]
    fn a_dropped_records_notice_cuts_the_report_instead_of_naming_no_job() {
        let jobs = [job(&["a"]), job(&["b"]), job(&["c"])];
        let jobs: Vec<&JobSpec> = jobs.iter().collect();
        // As synccheck wrote it over the planted suite on an H200 (2026-11-26).
        let notice = Finding {
            kind: "Sanitizer".into(),
            what:
                "Warning: Error buffer overflow has been detected. Some records have been dropped"
                    .into(),
            level: Some("Warning".into()),
            ..finding("", 1)
        };
        assert_eq!(
            share_out(&jobs, &run(vec![finding("b", 100), notice], 257, 3)),
            Shares {
                clean: vec![0],
                alone: vec![1],
                again: vec![2],
            }
        );
    }

    #[test]
    fn an_unread_report_an_unknown_kernel_or_a_tool_notice_sends_every_job_alone() {
        let jobs = [job(&["a"]), job(&["b"])];
        let jobs: Vec<&JobSpec> = jobs.iter().collect();
        let every = Shares {
            alone: vec![0, 1],
            ..Shares::default()
        };
        let mut unread = run(Vec::new(), 0, 2);
        unread.report_read = false;
        assert_eq!(share_out(&jobs, &unread), every);
        // A child kernel of dynamic parallelism, launched by no job directly.
        assert_eq!(
            share_out(&jobs, &run(vec![finding("child_kernel", 1)], 1, 2)),
            every
        );
        let mut notice = run(Vec::new(), 0, 2);
        notice.record.skipped = Some("memcheck says: not supported".into());
        assert_eq!(share_out(&jobs, &notice), every);
        // A total above what the XML shows, with no finding to say whose.
        assert_eq!(share_out(&jobs, &run(Vec::new(), 3, 2)), every);
    }

    #[test]
    fn settling_reruns_the_flagged_job_alone_and_batches_the_rest_again() {
        let jobs = [job(&["a"]), job(&["b"]), job(&["c"]), job(&["d"])];
        let jobs: Vec<&JobSpec> = jobs.iter().collect();
        let mut batches: Vec<Vec<String>> = Vec::new();
        let mut settled: Vec<String> = Vec::new();
        settle(
            &jobs,
            vec![0, 1, 2, 3],
            |n, members| {
                batches.push(
                    members
                        .iter()
                        .map(|j| j.launches[0].kernel.clone())
                        .collect(),
                );
                // The first child dies in b with a finding; the second finishes clean.
                if n == 0 {
                    run(vec![finding("b", 1)], 1, 1)
                } else {
                    run(Vec::new(), 0, members.len())
                }
            },
            |s| {
                settled.push(match s {
                    Settled::Clean(r) => {
                        assert_eq!(r.errors_reported, Some(0));
                        assert!(r.findings.is_empty() && !r.fails());
                        format!("clean {}", r.job_id)
                    }
                    Settled::Alone(i) => format!("alone {i}"),
                });
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(batches, [vec!["a", "b", "c", "d"], vec!["c", "d"]]);
        let id = |k: usize| jobs[k].id().to_string();
        assert_eq!(
            settled,
            [
                format!("clean {}", id(0)),
                "alone 1".into(),
                format!("clean {}", id(2)),
                format!("clean {}", id(3)),
            ]
        );
    }
}
