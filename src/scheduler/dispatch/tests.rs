//! The dispatch's tests, through mock executors: every job of every suite recorded once, one job per GPU at a time, passes one at a time, host-link jobs alone, failures kept or stopping the run.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::mocks::{Occupied, Watch, Watched};
use super::{run, run_sharing};
use crate::executor::{Failure, MockExecutor};
use crate::exit;
use crate::metrics::Catalog;
use crate::profiler::ClockControl;
use crate::records::{JobStatus, TimingConfig};
use crate::scheduler::host_share::HostShare;
use crate::scheduler::planning::{ProfileRequest, RunSettings, plan, screen};
use crate::store;
use crate::suite::{JobSpec, Suite};

fn settings(out: &Path, profile: bool) -> RunSettings {
    RunSettings {
        out: out.to_path_buf(),
        timing: TimingConfig::default(),
        cache: None,
        seed: 1,
        timeout: Duration::from_secs(5),
        profile: profile.then(|| ProfileRequest {
            names: vec![],
            clock_control: ClockControl::None,
            duration_runs: crate::records::DURATION_RUNS,
            profiler: crate::profiler::ProfilerChoice::Ncu,
            hotspots: None,
            counters_only: false,
        }),
        command_line: "test".into(),
        build: Default::default(),
        quiet: true,
        shard: None,
        sanitize: Vec::new(),
        sanitize_only: false,
        sanitize_timeout: Duration::from_secs(5),
        sanitize_each: false,
    }
}

/// A suite of this repository, by its manifest's path from the crate root.
fn repo_suite(manifest: &str) -> Suite {
    crate::suite::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(manifest)).unwrap()
}

/// Every run directory is one of `suites`, finished, with each job timed once and profiled once.
fn assert_each_run_complete(dirs: &[PathBuf], suites: &[Suite]) {
    for dir in dirs {
        let (run, _) = store::load_run(dir).unwrap();
        let suite = suites.iter().find(|s| s.name() == run.info.suite).unwrap();
        assert!(run.info.finished.is_some() && run.info.wall_seconds.is_some());
        assert_eq!(
            (run.jobs.len(), run.profiles.len()),
            (suite.jobs.len(), suite.jobs.len())
        );
    }
}

// Orchestration only, through the mock: every job of a built-in suite gets a record, saved as it goes.
#[test]
fn a_mock_run_records_every_job_bound_and_profile_and_says_mock() {
    let d = tempfile::tempdir().unwrap();
    let suite = repo_suite("kernels/shared-memory/suite.toml");
    let suites = [suite];
    let mock = MockExecutor::default();
    let s = settings(d.path(), true);
    let mut plans = plan(
        &suites,
        &[],
        s.profile.as_ref(),
        &Catalog::builtin().unwrap(),
    )
    .unwrap();
    screen(&mut plans, &mock).unwrap();
    let mut dirs = Vec::new();
    let code = run(&[&mock], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap();
    assert_eq!(code, exit::OK);
    let (run, warnings) = store::load_run(&dirs[0]).unwrap();
    assert!(warnings.is_empty());
    assert!(run.info.mock && run.info.finished.is_some());
    assert_eq!(run.jobs.len(), suites[0].jobs.len());
    assert_eq!(run.profiles.len(), run.jobs.len());
    assert_eq!(run.bounds.len(), run.groups().len());
    assert!(
        run.jobs.iter().all(|j| j.status == JobStatus::Ok
            && j.correctness.is_none()
            && j.nvml_after.is_none())
    );
    let md = std::fs::read_to_string(dirs[0].join("report.md")).unwrap();
    assert!(md.contains("MOCK"), "{md}");
    assert!(!dirs[0].join("work").exists());
    // The mock loads no kernel: no occupancy is recorded or shown.
    assert!(run.jobs.iter().all(|j| j.occupancy.is_empty()) && !md.contains("### Occupancy"));
}

#[test]
fn a_jobs_occupancy_is_stored_with_its_record_and_reported() {
    let d = tempfile::tempdir().unwrap();
    let suite = repo_suite("kernels/occupancy/suite.toml");
    let suites = [suite];
    let plans = plan(&suites, &[], None, &Catalog::builtin().unwrap()).unwrap();
    let mut dirs = Vec::new();
    assert_eq!(
        run(&[&Occupied], &plans, &settings(d.path(), false), &mut |p| {
            dirs.push(p.to_path_buf())
        })
        .unwrap(),
        exit::OK
    );
    let (data, warnings) = store::load_run(&dirs[0]).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(data.jobs.iter().all(|j| j.occupancy.len() == 1
        && j.occupancy[0].registers_per_thread == 40
        && j.occupancy[0].limiter() == Some(crate::occupancy::Limiter::Registers)));
    let md = std::fs::read_to_string(dirs[0].join("report.md")).unwrap();
    assert!(
        md.contains("### Occupancy")
            && md.contains("| 37.5%")
            && md.contains("no limiter: test: no model"),
        "{md}"
    );
}

#[test]
fn two_gpus_share_a_suites_jobs_one_job_per_gpu_at_a_time_each_with_its_own_bounds() {
    let watch = Watch::default();
    let d = tempfile::tempdir().unwrap();
    let suite = repo_suite("kernels/shared-memory/suite.toml");
    let suites = [suite];
    let (a, b) = (Watched::new(0, &watch, 5, 2), Watched::new(1, &watch, 5, 2));
    let s = settings(d.path(), true);
    let mut plans = plan(
        &suites,
        &[],
        s.profile.as_ref(),
        &Catalog::builtin().unwrap(),
    )
    .unwrap();
    screen(&mut plans, &a).unwrap();
    let mut dirs = Vec::new();
    assert_eq!(
        run(&[&a, &b], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap(),
        exit::OK
    );
    assert_eq!(
        watch.most.load(Ordering::SeqCst),
        2,
        "both GPUs ran jobs at once, and never more than one each"
    );
    let mut tags = watch.tags.lock().unwrap().clone();
    let all = tags.len();
    tags.sort();
    tags.dedup();
    assert_eq!(
        tags.len(),
        all,
        "no two steps share a tag (their files in the work directory): {tags:?}"
    );
    let (run, warnings) = store::load_run(&dirs[0]).unwrap();
    assert!(warnings.is_empty());
    let uuids: Vec<String> = run.info.gpus.iter().map(|g| g.uuid.clone()).collect();
    assert_eq!(uuids, ["MOCK-GPU-0", "MOCK-GPU-1"]);
    // Every job once, tagged with the GPU that ran it; both GPUs ran some.
    let mut ids: Vec<&str> = run.jobs.iter().map(|j| j.id()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), suites[0].jobs.len());
    assert_eq!(run.jobs.len(), suites[0].jobs.len());
    for uuid in &uuids {
        assert!(
            run.jobs.iter().any(|j| j.gpu.as_ref() == Some(uuid)),
            "GPU {uuid} ran no job"
        );
    }
    // Each GPU measured the bounds of every group it ran a job of, and each job is compared with its own GPU's.
    for j in &run.jobs {
        let gpu = j.gpu.clone().unwrap();
        let own = run
            .gpu_bounds
            .get(&(j.key.group.clone(), gpu.clone()))
            .unwrap_or_else(|| panic!("no bound of {} on {gpu}", j.key.group));
        assert_eq!(run.bound_of(j), Some(own));
    }
    assert_eq!(run.profiles.len(), run.jobs.len());
    assert!(
        run.profiles
            .values()
            .all(|p| p.gpu.as_ref().is_some_and(|g| uuids.contains(g)))
    );
    let md = std::fs::read_to_string(dirs[0].join("report.md")).unwrap();
    assert!(
        md.contains("GPU 1: MOCK GPU") && md.contains("Copy bound measured on each GPU"),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| variant") && l.contains("| GPU ")),
        "a column says which GPU timed each job: {md}"
    );
}

#[test]
fn one_gpu_times_every_job_of_every_suite_before_its_first_ncu_pass() {
    let watch = Watch::default();
    let d = tempfile::tempdir().unwrap();
    let suites = [
        repo_suite("kernels/shared-memory/suite.toml"),
        repo_suite("kernels/warp-divergence/suite.toml"),
    ];
    let lane = Watched::new(0, &watch, 0, 1);
    let s = settings(d.path(), true);
    let plans = plan(
        &suites,
        &[],
        s.profile.as_ref(),
        &Catalog::builtin().unwrap(),
    )
    .unwrap();
    let mut dirs = Vec::new();
    assert_eq!(
        run(&[&lane], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap(),
        exit::OK
    );
    let tags = watch.tags.lock().unwrap().clone();
    let last_job = tags.iter().rposition(|t| t.starts_with("job-")).unwrap();
    let first_pass = tags.iter().position(|t| t.starts_with("profile-")).unwrap();
    assert!(last_job < first_pass, "{tags:?}");
    assert_eq!(watch.most.load(Ordering::SeqCst), 1);
    // Both runs finished, in suite order, each complete.
    assert_eq!(dirs.len(), 2);
    for (dir, suite) in dirs.iter().zip(&suites) {
        assert_eq!(store::load_run(dir).unwrap().0.info.suite, suite.name());
    }
    assert_each_run_complete(&dirs, &suites);
}

#[test]
fn on_two_gpus_passes_run_beside_the_timing_one_at_a_time() {
    let watch = Watch::default();
    let d = tempfile::tempdir().unwrap();
    let suites = [
        repo_suite("kernels/shared-memory/suite.toml"),
        repo_suite("kernels/warp-divergence/suite.toml"),
    ];
    let (a, b) = (Watched::new(0, &watch, 5, 2), Watched::new(1, &watch, 5, 2));
    let s = settings(d.path(), true);
    let plans = plan(
        &suites,
        &[],
        s.profile.as_ref(),
        &Catalog::builtin().unwrap(),
    )
    .unwrap();
    let mut dirs = Vec::new();
    assert_eq!(
        run(&[&a, &b], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap(),
        exit::OK
    );
    let tags = watch.tags.lock().unwrap().clone();
    let last_job = tags.iter().rposition(|t| t.starts_with("job-")).unwrap();
    let first_pass = tags.iter().position(|t| t.starts_with("profile-")).unwrap();
    assert!(
        first_pass < last_job,
        "no pass ran before the last job was timed: {tags:?}"
    );
    assert_eq!(
        watch.most_passes.load(Ordering::SeqCst),
        1,
        "one ncu session at a time"
    );
    // One pass per group, each once; every job timed once and profiled once.
    let passes: Vec<&String> = tags.iter().filter(|t| t.starts_with("profile-")).collect();
    let groups: usize = plans
        .iter()
        .map(|p| {
            p.jobs
                .iter()
                .map(|j| &j.key.group)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        })
        .sum();
    assert_eq!(passes.len(), groups, "{passes:?}");
    assert_eq!(dirs.len(), suites.len(), "every suite's run finished");
    assert_each_run_complete(&dirs, &suites);
}

#[test]
fn a_job_that_crosses_the_host_link_is_timed_with_every_other_gpu_idle() {
    // Profiled (passes must keep off the host too) and not (device-only jobs, each lane's
    // first waiting for the other's, must still run side by side).
    for profile in [true, false] {
        let watch = Watch::default();
        let d = tempfile::tempdir().unwrap();
        let suites = [
            repo_suite("kernels/warp-divergence/suite.toml"),
            repo_suite("kernels/transfers/suite.toml"),
        ];
        let (a, b) = (Watched::new(0, &watch, 3, 2), Watched::new(1, &watch, 3, 2));
        let s = settings(d.path(), profile);
        let plans = plan(
            &suites,
            &[],
            s.profile.as_ref(),
            &Catalog::builtin().unwrap(),
        )
        .unwrap();
        assert!(
            !plans[0].jobs.iter().any(JobSpec::crosses_host_link)
                && plans[1].jobs.iter().all(JobSpec::crosses_host_link)
        );
        let mut dirs = Vec::new();
        assert_eq!(
            run(&[&a, &b], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap(),
            exit::OK
        );
        assert_eq!(
            *watch.crowded.lock().unwrap(),
            Vec::<String>::new(),
            "steps that shared the host with a host-link step"
        );
        let linked = watch.jobs_linked.lock().unwrap().clone();
        assert!(
            linked.windows(2).all(|w| w[0] >= w[1]),
            "the host-link suite (listed second) ran first: {linked:?}"
        );
        if profile {
            assert_each_run_complete(&dirs, &suites);
        } else {
            assert_eq!(
                watch.most.load(Ordering::SeqCst),
                2,
                "device-only jobs still ran on both GPUs at once"
            );
            assert_eq!(
                linked.len(),
                suites.iter().map(|s| s.jobs.len()).sum::<usize>()
            );
        }
    }
}

/// Two one-GPU runs of `suites` side by side, as a host of two GPU models runs them, sharing
/// one `HostShare`; both must end well.
fn two_models_side_by_side(watch: &Watch, suites: &[Suite], profile: bool) {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (Watched::new(0, watch, 2, 1), Watched::new(1, watch, 2, 1));
    let request = ProfileRequest {
        names: vec![],
        clock_control: ClockControl::None,
        duration_runs: crate::records::DURATION_RUNS,
        profiler: crate::profiler::ProfilerChoice::Ncu,
        hotspots: None,
        counters_only: false,
    };
    let plans = plan(
        suites,
        &[],
        profile.then_some(&request),
        &Catalog::builtin().unwrap(),
    )
    .unwrap();
    let host = HostShare::default();
    let (sa, sb) = (
        settings(&d.path().join("a"), profile),
        settings(&d.path().join("b"), profile),
    );
    let codes: Vec<i32> = std::thread::scope(|s| {
        let one = s.spawn(|| run_sharing(&[&a], &plans, &sa, &host, &mut |_| {}).unwrap());
        let two = s.spawn(|| run_sharing(&[&b], &plans, &sb, &host, &mut |_| {}).unwrap());
        vec![one.join().unwrap(), two.join().unwrap()]
    });
    assert_eq!(codes, [exit::OK, exit::OK]);
}

#[test]
fn runs_of_two_gpu_models_time_host_link_jobs_with_the_other_model_idle_too() {
    let watch = Watch::default();
    let suites = [
        repo_suite("kernels/transfers/suite.toml"),
        repo_suite("kernels/warp-divergence/suite.toml"),
    ];
    two_models_side_by_side(&watch, &suites, false);
    assert_eq!(
        *watch.crowded.lock().unwrap(),
        Vec::<String>::new(),
        "steps that shared the host with a host-link step"
    );
    let jobs = suites.iter().map(|s| s.jobs.len()).sum::<usize>();
    assert_eq!(
        watch.jobs_linked.lock().unwrap().len(),
        2 * jobs,
        "each model ran every job"
    );
}

#[test]
fn runs_of_two_gpu_models_share_the_hosts_one_ncu_session() {
    let watch = Watch::default();
    two_models_side_by_side(
        &watch,
        &[repo_suite("kernels/warp-divergence/suite.toml")],
        true,
    );
    assert_eq!(
        watch.most_passes.load(Ordering::SeqCst),
        1,
        "one ncu session on the host at a time"
    );
    let passes = watch
        .tags
        .lock()
        .unwrap()
        .iter()
        .filter(|t| t.starts_with("profile-"))
        .count();
    assert!(passes >= 2, "both runs profiled: {passes}");
}

#[test]
fn a_lane_that_panics_stops_the_others_instead_of_leaving_them_waiting() {
    let watch = Watch::default();
    let d = tempfile::tempdir().unwrap();
    let suite = repo_suite("kernels/shared-memory/suite.toml");
    let suites = [suite];
    let healthy = Watched::new(0, &watch, 5, 1);
    let panicking = Watched::failing(&watch, Failure::Fatal("panic".into()));
    let s = settings(d.path(), true);
    let plans = plan(
        &suites,
        &[],
        s.profile.as_ref(),
        &Catalog::builtin().unwrap(),
    )
    .unwrap();
    let e = run(&[&healthy, &panicking], &plans, &s, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("panicked"), "{e}");
}

#[test]
fn a_hung_job_keeps_its_log_and_a_fatal_failure_stops_the_run_unfinished() {
    let d = tempfile::tempdir().unwrap();
    let suite = repo_suite("tests/gpu/faults/suite.toml");
    let suites = [suite];
    let plans = plan(&suites, &[], None, &Catalog::builtin().unwrap()).unwrap();
    let log = d.path().join("hung.log");
    std::fs::write(&log, "started, then nothing").unwrap();
    let watch = Watch::default();
    let hung = Watched::failing(
        &watch,
        Failure::TimedOut {
            after: Duration::from_secs(20),
            log: Some(log),
        },
    );
    let mut dirs = Vec::new();
    assert_eq!(
        run(&[&hung], &plans, &settings(d.path(), false), &mut |p| dirs
            .push(p.to_path_buf()))
        .unwrap(),
        exit::JOBS_FAILED
    );
    let (data, _) = store::load_run(&dirs[0]).unwrap();
    assert!(data.jobs.iter().all(|j| j.status == JobStatus::TimedOut
        && j.error.as_deref().unwrap().contains("(full log: logs/job-")));
    assert_eq!(
        std::fs::read_dir(dirs[0].join("logs")).unwrap().count(),
        data.jobs.len()
    );

    let fatal = Watched::failing(&watch, Failure::Fatal("could not start gpu-lab".into()));
    let out = d.path().join("fatal");
    let e = run(&[&fatal], &plans, &settings(&out, false), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("could not start gpu-lab"));
    let dir = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let (data, _) = store::load_run(&dir).unwrap();
    assert!(
        data.info.finished.is_none() && data.jobs.is_empty(),
        "an unfinished run, as a killed one"
    );
}
