//! A host-program job's timeline: its picture (`picture`), and the file it is saved under beside the report.

mod picture;

pub use picture::{MOCK_MARK, timeline_svg};

use crate::records::{JobRecord, RunData};

/// The file a job's timeline is saved under, relative to the run directory: `timelines/<slug>.svg`,
/// the slug the job id in lower-case letters, digits and dashes, then a hash of the whole id, so
/// that ids differing only in punctuation or case never share a file.
pub fn timeline_file(job_id: &str) -> String {
    let mut slug = String::new();
    for c in job_id.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.chars().take(80).collect();
    // FNV-1a: stable across builds and platforms (std's hasher is not).
    let hash = job_id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    let slug = slug.trim_end_matches('-');
    format!(
        "timelines/{}{:08x}.svg",
        if slug.is_empty() {
            String::new()
        } else {
            format!("{slug}-")
        },
        hash as u32
    )
}

/// The file of a job's timeline in `run`: `timeline_file`, unless another job of the run with a
/// timeline maps to the same file (two ids of one slug whose 32-bit hashes meet), when every such
/// job gets a file of its own that adds 128 bits of sha256 of its id. Old runs, without
/// collisions, keep their file names.
pub fn timeline_file_in(run: &RunData, job_id: &str) -> String {
    let base = timeline_file(job_id);
    let collides = run
        .jobs
        .iter()
        .any(|j| j.timeline.is_some() && j.id() != job_id && timeline_file(j.id()) == base);
    if !collides {
        return base;
    }
    use sha2::{Digest, Sha256};
    let digest: String = Sha256::digest(job_id.as_bytes())[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}-{digest}.svg", base.trim_end_matches(".svg"))
}

/// The title of a job's timeline: the suite, the job and the GPU (a mock run's title already says
/// MOCK, and the mock device's long name would only say it again).
fn job_title(run: &RunData, job: &JobRecord) -> String {
    let gpu = if run.info.mock {
        "the MOCK GPU"
    } else {
        run.info.gpu_name()
    };
    format!("{}: {} on {gpu}", run.info.suite, job.key.id)
}

/// Every job's timeline picture, with the file it goes in (`timeline_file`), for the jobs that
/// recorded a timeline.
pub fn timeline_files(run: &RunData) -> Vec<(String, String)> {
    run.jobs
        .iter()
        .filter_map(|j| {
            Some((
                timeline_file_in(run, j.id()),
                timeline_svg(&job_title(run, j), j.timeline.as_ref()?),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Timeline;

    #[test]
    fn timeline_files_are_safe_distinct_and_stable() {
        let ids = [
            "chunked[CHUNKS=2,S=4] @ N=1048576",
            "chunked[chunks=2,s=4] @ n=1048576",
            "a b",
            "a_b",
            "../../etc/passwd",
            "",
            "@@@",
            "ü/\\:*?\"<>|",
        ];
        let files: Vec<String> = ids.iter().map(|id| timeline_file(id)).collect();
        for f in &files {
            let name = f
                .strip_prefix("timelines/")
                .and_then(|n| n.strip_suffix(".svg"))
                .unwrap();
            assert!(
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !name.starts_with('-'),
                "{f}"
            );
        }
        let distinct: std::collections::BTreeSet<&String> = files.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "{files:?}");
        assert!(
            files[0].starts_with("timelines/chunked-chunks-2-s-4-n-1048576-"),
            "{}",
            files[0]
        );
        assert_eq!(timeline_file(ids[0]), files[0]);
        assert!(timeline_file(&"x".repeat(1000)).len() < 120);
    }

    #[test]
    fn only_jobs_with_a_timeline_get_a_file() {
        let with = JobRecord {
            key: crate::records::JobKey {
                id: "chunked @ N=1".into(),
                ..Default::default()
            },
            timeline: Some(Timeline {
                total_ms: 1.0,
                steps: Vec::new(),
                mock: false,
            }),
            ..Default::default()
        };
        let without = JobRecord {
            key: crate::records::JobKey {
                id: "plain @ N=1".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        let run = RunData {
            info: crate::records::RunInfo {
                suite: "streams".into(),
                ..Default::default()
            },
            jobs: vec![with, without],
            ..Default::default()
        };
        let files = timeline_files(&run);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].0, timeline_file("chunked @ N=1"));
        assert!(
            files[0].1.contains("streams: chunked @ N=1 on unknown GPU"),
            "{}",
            files[0].1
        );
    }
}

#[cfg(test)]
mod collision_tests {
    use super::*;
    use crate::records::Timeline;

    /// Two ids of one slug whose 32-bit hashes meet: case variants of one id (the slug lowers
    /// case), found by the birthday bound among 2^18 of them.
    fn colliding_ids() -> (String, String) {
        let base = "variantnamefortimelines";
        let mut seen = std::collections::HashMap::new();
        for bits in 0u32..(1 << 18) {
            let id: String = base
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if bits >> i & 1 == 1 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            if let Some(other) = seen.insert(timeline_file(&id), id.clone()) {
                return (other, id);
            }
        }
        panic!("no collision found");
    }

    #[test]
    fn two_jobs_whose_ids_share_a_slug_and_hash_get_timeline_files_of_their_own() {
        let (a, b) = colliding_ids();
        assert_eq!(
            timeline_file(&a),
            timeline_file(&b),
            "the old names collide"
        );
        let job = |id: &str| JobRecord {
            key: crate::records::JobKey {
                id: id.to_string(),
                ..Default::default()
            },
            timeline: Some(Timeline {
                total_ms: 1.0,
                steps: Vec::new(),
                mock: true,
            }),
            ..Default::default()
        };
        let run = RunData {
            jobs: vec![job(&a), job(&b), job("other @ N=1")],
            ..Default::default()
        };
        let (fa, fb) = (timeline_file_in(&run, &a), timeline_file_in(&run, &b));
        assert_ne!(fa, fb);
        assert!(fa.starts_with("timelines/") && fa.ends_with(".svg"));
        // A job without a collision keeps its name (old runs render as before).
        assert_eq!(
            timeline_file_in(&run, "other @ N=1"),
            timeline_file("other @ N=1")
        );
        let files: Vec<String> = timeline_files(&run).into_iter().map(|(f, _)| f).collect();
        assert_eq!(files.len(), 3);
        assert_eq!(
            files.iter().collect::<std::collections::HashSet<_>>().len(),
            3
        );
    }
}
