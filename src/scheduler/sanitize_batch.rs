//! One sanitized child for many variants (pure): which jobs may share a child (no kernel name twice, so a finding's kernel names its job), and what a batch's answer says of each job: clean, to be sanitized alone, or to go into the next batch.

use std::collections::BTreeSet;

use crate::cxx::base_name;
use crate::profiler::assign::reported_base_name;
use crate::records::BatchRun;
use crate::sanitizer::PRINT_LIMIT;
use crate::suite::JobSpec;

/// The base names of the kernels a job launches (a host program's kernel steps launch these too).
fn kernels(job: &JobSpec) -> BTreeSet<String> {
    job.launches.iter().map(|l| base_name(&l.kernel)).collect()
}

/// The jobs (by index into `jobs`) in groups that may share a child: within a group no kernel
/// name belongs to two jobs. Greedy, in order; a group of one is sanitized alone.
pub fn batches(jobs: &[&JobSpec]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Vec<usize>, BTreeSet<String>)> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let names = kernels(job);
        match groups
            .iter_mut()
            .find(|(_, taken)| taken.is_disjoint(&names))
        {
            Some((members, taken)) => {
                members.push(i);
                taken.extend(names);
            }
            None => groups.push((vec![i], names)),
        }
    }
    groups.into_iter().map(|(members, _)| members).collect()
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

/// Shares a batch's answer out among its jobs. A finding belongs to the one job launching its
/// kernel (`batches` saw to that). Trusted are the jobs the child finished, up to the first with a
/// finding where the report may have been cut at the print limit; where the report is unread,
/// a finding names no job's kernel, or the tool said it cannot check something (which job's?),
/// every job is sanitized alone.
pub fn share_out(jobs: &[&JobSpec], run: &BatchRun) -> Shares {
    let all_alone = || Shares {
        alone: (0..jobs.len()).collect(),
        ..Shares::default()
    };
    if !run.report_read || run.record.skipped.is_some() {
        return all_alone();
    }
    let owners: Option<BTreeSet<usize>> = run
        .record
        .findings
        .iter()
        .map(|f| {
            let base = reported_base_name(&f.kernel);
            jobs.iter().position(|j| kernels(j).contains(&base))
        })
        .collect();
    let Some(flagged) = owners else {
        return all_alone();
    };
    let shown: u64 = run.record.findings.iter().map(|f| f.reports).sum();
    let cut = shown >= u64::from(PRINT_LIMIT)
        || run
            .record
            .errors_reported
            .is_some_and(|total| total > shown);
    let mut trusted = run.completed.min(jobs.len());
    if cut && let Some(&first) = flagged.first() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Finding, SanitizeRecord, SanitizerTool};
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
    fn jobs_sharing_a_kernel_name_go_to_different_batches() {
        let (a, b, c, d) = (
            job(&["copy"]),
            job(&["ns::copy<float>"]),
            job(&["scale", "add"]),
            job(&["add"]),
        );
        assert_eq!(
            batches(&[&a, &b, &c, &d]),
            vec![vec![0, 2], vec![1, 3]],
            "copy twice and add twice may not share a child"
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
    }
}
