//! The fleet path of docs/fleet.md, run as written on a real one-node Slurm (controller and daemon on localhost, started and stopped by the test): a job array of mock-GPU shards, a merge job after it, and the merged run checked.
//!
//! Slurm's daemons come from the distribution's packages (Debian: `slurm-wlm`), so the test is
//! ignored by a plain `cargo test`; `.ci/run` installs them and runs it with `cargo test --release
//! --test integration -- --ignored slurm::`. The sbatch scripts and the submit lines are read out
//! of docs/fleet.md, so the document cannot drift from what works; the only things the test adds
//! are the environment a user's shell would have (gpu-lab on PATH) and `GPU_LAB_MOCK_GPU=1`, the
//! mock executor, since CI has no GPU.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A one-node Slurm whose daemons are killed when it goes out of scope, whatever the test did.
struct Cluster {
    conf: PathBuf,
    daemons: Vec<Child>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first (their steps are children of slurmd), then the daemons.
        let _ = Command::new("scancel")
            .arg("--user")
            .arg(user())
            .env("SLURM_CONF", &self.conf)
            .status();
        // SIGTERM lets each daemon stop its own helpers; SIGKILL after 10 s if it has not.
        for d in &mut self.daemons {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(d.id().to_string())
                .status();
        }
        for d in &mut self.daemons {
            let t0 = Instant::now();
            while matches!(d.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

fn user() -> String {
    let out = Command::new("id")
        .arg("-un")
        .output()
        .expect("`id -un` runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

fn find(program: &str) -> PathBuf {
    for dir in std::env::var("PATH").unwrap_or_default().split(':').chain([
        "/usr/sbin",
        "/usr/bin",
        "/usr/local/sbin",
        "/usr/local/bin",
    ]) {
        let p = Path::new(dir).join(program);
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "`{program}` is not installed: this test starts a real one-node Slurm.\n  fix: install Slurm's daemons and clients from the distribution (Debian/Ubuntu: `apt-get install slurm-wlm`; `.ci/run` does this)"
    );
}

/// Starts slurmctld and slurmd on localhost with a configuration of their own under `dir` (no
/// munge: `auth/none`; two stand-in GPUs as generic resources, so `--gpus=1` schedules).
fn start_cluster(dir: &Path) -> Cluster {
    for sub in ["state", "spool", "log"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let (d, user) = (dir.display(), user());
    let conf = dir.join("slurm.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=gpulabtest\nSlurmctldHost=localhost\nSlurmUser={user}\nSlurmdUser={user}\nAuthType=auth/none\nCredType=cred/none\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\nSlurmctldPort={}\nSlurmdPort={}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\nSchedulerType=sched/builtin\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\nMpiDefault=none\nGresTypes=gpu\n\
             AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nMailProg=/bin/true\n\
             NodeName=localhost CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN\nPartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
            free_port(),
            free_port()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("gres.conf"),
        "Name=gpu File=/dev/null\nName=gpu File=/dev/zero\n",
    )
    .unwrap();
    let daemon = |program: &str, args: &[&str]| {
        Command::new(find(program))
            .args(args)
            .arg("-f")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {program}: {e}"))
    };
    let mut cluster = Cluster {
        conf: conf.clone(),
        daemons: vec![daemon("slurmctld", &["-D", "-i"])],
    };
    cluster
        .daemons
        .push(daemon("slurmd", &["-D", "-N", "localhost"]));
    let t0 = Instant::now();
    loop {
        let out = Command::new(find("sinfo"))
            .args(["-h", "-o", "%T"])
            .env("SLURM_CONF", &conf)
            .output()
            .unwrap();
        let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if state == "idle" {
            return cluster;
        }
        let log = |f: &str| std::fs::read_to_string(dir.join("log").join(f)).unwrap_or_default();
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the node never became idle (state `{state}`)\nslurmctld.log:\n{}\nslurmd.log:\n{}",
            log("slurmctld.log"),
            log("slurmd.log")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The fenced ```sh blocks of a markdown text, in order.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```sh") => current = Some(String::new()),
            (Some(_), l) if l.starts_with("```") => blocks.extend(current.take()),
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

fn block_with(blocks: &[String], needle: &str) -> String {
    blocks
        .iter()
        .find(|b| b.contains(needle))
        .cloned()
        .unwrap_or_else(|| panic!("docs/fleet.md has no sh block with `{needle}`"))
}

#[test]
#[ignore = "needs Slurm's daemons and clients (Debian/Ubuntu: apt-get install slurm-wlm; .ci/run installs them and runs it): cargo test --release --test integration -- --ignored slurm::"]
fn the_fleet_document_runs_as_written_on_a_one_node_slurm() {
    let root = crate::common::repo();
    let doc = std::fs::read_to_string(root.join("docs/fleet.md")).unwrap();
    let blocks = sh_blocks(&doc);
    let d = tempfile::tempdir().unwrap();
    let work = d.path().join("submit");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("shard.sbatch"),
        block_with(&blocks, "#SBATCH --job-name=gpu-lab-shard"),
    )
    .unwrap();
    std::fs::write(
        work.join("merge.sbatch"),
        block_with(&blocks, "#SBATCH --job-name=gpu-lab-merge"),
    )
    .unwrap();
    std::fs::write(
        work.join("submit.sh"),
        block_with(&blocks, "sbatch --parsable"),
    )
    .unwrap();

    let cluster = start_cluster(&d.path().join("slurm"));
    let exe = assert_cmd::cargo::cargo_bin("gpu-lab");
    let path = format!(
        "{}:{}",
        exe.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let submitted = Command::new("bash")
        .args(["-euo", "pipefail", "submit.sh"])
        .current_dir(&work)
        .env("PATH", &path)
        .env("SLURM_CONF", &cluster.conf)
        .env("GPU_LAB_MOCK_GPU", "1")
        .env("GPU_LAB_KERNELS", root.join("kernels"))
        .env("GPU_LAB_CACHE", d.path().join("cache"))
        .env("GPU_LAB_DATA", d.path().join("data"))
        .output()
        .unwrap();
    assert!(
        submitted.status.success(),
        "the submit lines of docs/fleet.md failed: {}",
        String::from_utf8_lossy(&submitted.stderr)
    );

    // Every job of the array and the merge job leave the queue.
    let t0 = Instant::now();
    loop {
        let q = Command::new(find("squeue"))
            .args(["-h", "-o", "%i %T %r"])
            .env("SLURM_CONF", &cluster.conf)
            .output()
            .unwrap();
        let queue = String::from_utf8_lossy(&q.stdout).trim().to_string();
        if q.status.success() && queue.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(240),
            "jobs still queued after 4 minutes:\n{queue}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let outputs: String = std::fs::read_dir(&work)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("slurm-"))
        .map(|e| {
            format!(
                "{}:\n{}\n",
                e.path().display(),
                std::fs::read_to_string(e.path()).unwrap_or_default()
            )
        })
        .collect();

    // Four shard runs, one path each, and one merged run of the whole plan.
    let shard_dirs: Vec<PathBuf> = std::fs::read_dir(work.join("shards"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(shard_dirs.len(), 1, "one array: {shard_dirs:?}\n{outputs}");
    let paths: Vec<PathBuf> = (0..4)
        .map(|i| shard_dirs[0].join(format!("shard-{i}.path")))
        .collect();
    for p in &paths {
        let run = std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("{}: {e}\n{outputs}", p.display()));
        assert!(
            Path::new(run.trim()).join("results.jsonl").is_file(),
            "shard path `{run}`\n{outputs}"
        );
    }
    let merged: Vec<PathBuf> = std::fs::read_dir(work.join("reports/merged"))
        .unwrap_or_else(|e| panic!("no merged run: {e}\n{outputs}"))
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(merged.len(), 1, "{merged:?}\n{outputs}");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged[0].join("run.json")).unwrap())
            .unwrap();
    assert_eq!(
        info["merged_from"].as_array().map(|a| a.len()),
        Some(4),
        "{info}"
    );
    assert_eq!(info["mock"], true);

    // The merged run holds every job of the plan exactly once, and its report says MOCK.
    let plan = Command::new(&exe)
        .args(["plan", "--suite", "transpose", "--shards", "4"])
        .env("GPU_LAB_KERNELS", root.join("kernels"))
        .output()
        .unwrap();
    let planned: Vec<String> = String::from_utf8_lossy(&plan.stdout)
        .lines()
        .map(|l| l.rsplit('\t').next().unwrap().to_string())
        .collect();
    let results = std::fs::read_to_string(merged[0].join("results.jsonl")).unwrap();
    let mut ran: Vec<String> = results
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["kind"] == "job")
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ran.sort();
    let mut want = planned.clone();
    want.sort();
    assert!(!want.is_empty());
    assert_eq!(ran, want);
    let report = std::fs::read_to_string(merged[0].join("report.md")).unwrap();
    assert!(
        report.starts_with("# gpu-lab report: transpose (MOCK)"),
        "{report}"
    );
    drop(cluster);
}
