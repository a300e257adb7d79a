//! Source hot spots (`--hotspots`): one more ncu session over a pass, with the SourceCounters and WarpStateStats sections and the source imported into the report, then its source page read back per kernel and ranked by `parse::source_page`.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::assign::{kernel_name_matches, reported_base_name};
use super::{ClockControl, Ncu, ProfilerError, diagnose, report_path};
use crate::parse::source_page;
use crate::process::{self, FailureKind};
use crate::records::{Hotspots, ProgramKernel};
use crate::store::{FileKind, read_regular_text, write_atomic};
use crate::suite::JobSpec;

/// ncu's sections that give per-line warp samples (SourceCounters: `smsp__pcsamp_*`, the
/// per-instruction memory counters) and the stall reasons' names (WarpStateStats).
pub const SECTIONS: [&str; 2] = ["SourceCounters", "WarpStateStats"];

/// How many lines of each kernel the report lists.
pub const TOP_LINES: usize = 8;

/// Which jobs' hot spots to read: every job, or the jobs of these variants.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HotspotRequest {
    variants: Vec<String>,
}

impl HotspotRequest {
    /// `--hotspots [VARIANTS]`: no name (or only empty ones) means every variant.
    pub fn new(names: Vec<String>) -> Self {
        let mut variants: Vec<String> = names
            .into_iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        variants.dedup();
        HotspotRequest { variants }
    }

    pub fn wants(&self, job: &JobSpec) -> bool {
        self.variants.is_empty() || self.variants.contains(&job.key.variant)
    }

    /// The variants named that none of `jobs` is (a typo, or a variant not selected).
    pub fn unmatched<'a>(&self, jobs: impl Iterator<Item = &'a JobSpec> + Clone) -> Vec<String> {
        self.names_not(|v| jobs.clone().any(|j| j.key.variant == v))
    }

    /// `gpu-lab ncu --hotspots [KERNELS]`: whether a profiled kernel (its name as ncu prints it)
    /// is wanted: every kernel, or one whose name or whose function's own name was given.
    pub fn wants_kernel(&self, reported: &str) -> bool {
        self.variants.is_empty() || self.variants.iter().any(|n| names_kernel(n, reported))
    }

    /// The kernel names given that no profiled kernel has.
    pub fn unmatched_kernels(&self, reported: &[&str]) -> Vec<String> {
        self.names_not(|n| reported.iter().any(|r| names_kernel(n, r)))
    }

    fn names_not(&self, found: impl Fn(&str) -> bool) -> Vec<String> {
        self.variants
            .iter()
            .filter(|n| !found(n))
            .cloned()
            .collect()
    }
}

/// `copy_row`, `transpose_tile` (every instance), `transpose_tile<1, 0>` (one, as ncu writes its
/// arguments) or ncu's whole `void transpose_tile<1, 0>(const float *, float *, int)` name the
/// kernel ncu reports as that.
fn names_kernel(name: &str, reported: &str) -> bool {
    let (name, reported) = (name.trim(), reported.trim());
    name == reported
        || reported
            .strip_prefix("void ")
            .unwrap_or(reported)
            .split('(')
            .next()
            == Some(name)
        || (!name.contains('<') && name == reported_base_name(reported))
}

/// The arguments of the hot-spot session: clocks as asked, the two sections, the source files
/// copied into the report (so the line text survives the run's scratch files), every process.
pub fn session_args(clock_control: ClockControl, report_base: &Path) -> Vec<String> {
    let mut a = vec!["--clock-control".to_string(), clock_control.as_str().into()];
    a.extend(section_args());
    a.extend(["--target-processes", "all", "--force-overwrite", "--export"].map(String::from));
    a.push(report_base.display().to_string());
    a
}

/// What an ncu session adds to read hot spots: the two sections, and the source files copied
/// into the report (so the lines' text survives the program's build directory).
pub fn section_args() -> Vec<String> {
    let mut a = Vec::new();
    for s in SECTIONS {
        a.extend(["--section".to_string(), s.to_string()]);
    }
    a.extend(["--import-source".to_string(), "yes".to_string()]);
    a
}

/// One hot-spot session over a pass of launches.
pub struct HotspotSession<'a> {
    pub ncu: &'a Ncu,
    /// The program ncu runs: it launches every job's kernels once, in job order.
    pub target: Vec<OsString>,
    pub jobs: &'a [&'a JobSpec],
    pub clock_control: ClockControl,
    /// `NAME.ncu-rep`, `NAME.log` and `NAME.source.csv` are written here.
    pub dir: &'a Path,
    pub name: String,
    pub timeout: Duration,
}

/// Each job's hot spots, in the order of `s.jobs`; a job ncu could not read gets why.
pub fn collect(s: &HotspotSession) -> Vec<Hotspots> {
    let failed = |why: String, report: Option<String>| {
        s.jobs
            .iter()
            .map(|_| Hotspots::failed(why.clone(), report.clone()))
            .collect()
    };
    if s.jobs.is_empty() {
        return Vec::new();
    }
    let report_base = s.dir.join(&s.name);
    let report = report_path(&report_base);
    let log = s.dir.join(format!("{}.log", s.name));
    let mut cmd = s.ncu.command_over_child();
    cmd.args(session_args(s.clock_control, &report_base));
    cmd.args(&s.target);
    let ended = process::run(
        &mut cmd,
        &process::Output::Log(log.clone()),
        Some(s.timeout),
    );
    let text = match &ended {
        Ok(f) => f.text.clone(),
        Err(_) => read_regular_text(&log, FileKind::LOG).unwrap_or_default(),
    };
    if let Some(why) = diagnose(&text)
        && (!report.exists() || matches!(why, ProfilerError::CountersNotPermitted))
    {
        return failed(why.to_string(), None);
    }
    match ended.and_then(|f| f.success()) {
        Ok(_) => {}
        Err(e) if matches!(e.kind, FailureKind::TimedOut(_)) || !report.exists() => {
            return failed(ProfilerError::Failed(e).to_string(), None);
        }
        // A report was written: its lines are still ncu's, and the log says what else happened.
        Err(_) => {}
    }
    if !report.exists() {
        return failed(
            format!(
                "ncu profiled no launch and wrote no report; see {}",
                log.display()
            ),
            None,
        );
    }
    let report_name = report.file_name().map(|n| n.to_string_lossy().to_string());
    let csv = match export_source(s.ncu, &report) {
        Ok(csv) => csv,
        Err(e) => return failed(e.to_string(), report_name),
    };
    // Kept beside the report: what the table was read from (a failed write costs only that).
    let _ = write_atomic(
        &s.dir.join(format!("{}.source.csv", s.name)),
        csv.as_bytes(),
    );
    match source_page::parse(&csv) {
        Ok(kernels) => by_job(s.jobs, kernels, report_name),
        Err(e) => failed(
            format!(
                "{e}; see {}",
                s.dir.join(format!("{}.source.csv", s.name)).display()
            ),
            report_name,
        ),
    }
}

/// The kernels of the source page, in launch order, handed out to the jobs by their launch
/// counts; a count or a kernel name that does not agree leaves every job with why rather than
/// another's lines.
pub fn by_job(
    jobs: &[&JobSpec],
    kernels: Vec<source_page::KernelSource>,
    report_file: Option<String>,
) -> Vec<Hotspots> {
    let launched: Vec<&str> = jobs
        .iter()
        .flat_map(|j| j.launches.iter().map(|l| l.kernel.as_str()))
        .collect();
    if let Some(why) = mismatch(&kernels, &launched, "the pass launched") {
        return jobs
            .iter()
            .map(|_| Hotspots::failed(why.clone(), report_file.clone()))
            .collect();
    }
    let mut kernels = kernels.into_iter();
    jobs.iter()
        .map(|j| Hotspots {
            report_file: report_file.clone(),
            kernels: kernels
                .by_ref()
                .take(j.launches.len())
                .map(|k| source_page::hot_lines(&k, TOP_LINES))
                .collect(),
            error: None,
        })
        .collect()
}

/// Why the source page's kernels cannot be handed out to these launches in order (`launched`:
/// the kernels as declared or as ncu's raw page names them, `whose` says which), if they cannot.
fn mismatch(
    kernels: &[source_page::KernelSource],
    launched: &[&str],
    whose: &str,
) -> Option<String> {
    if kernels.len() != launched.len() {
        return Some(format!(
            "ncu's source page has {} kernels where {whose} {}: which lines are whose is uncertain, so none are kept",
            kernels.len(),
            launched.len()
        ));
    }
    kernels
        .iter()
        .zip(launched)
        .find(|(k, wanted)| !kernel_name_matches(&k.kernel, wanted))
        .map(|(k, wanted)| {
            format!(
                "ncu's source page has kernel `{}` where {whose} `{wanted}`: which lines are whose is uncertain, so none are kept",
                k.kernel
            )
        })
}

/// `gpu-lab ncu --hotspots`: the source page's kernels handed to the raw page's launches in
/// order (`launched`: ncu's full names, which tell template instances apart), the launches of
/// one kernel summed into one table, in the order of their first launch; only the kernels
/// `request` wants. Err: why the page and the launches do not agree.
pub fn by_kernel(
    kernels: Vec<source_page::KernelSource>,
    launched: &[&str],
    request: &HotspotRequest,
) -> Result<Vec<ProgramKernel>, String> {
    // The page names a kernel by its function alone; the raw page by its demangled signature.
    let functions: Vec<String> = launched.iter().map(|n| reported_base_name(n)).collect();
    let functions: Vec<&str> = functions.iter().map(String::as_str).collect();
    if let Some(why) = mismatch(&kernels, &functions, "the report profiled") {
        return Err(why);
    }
    let mut merged: Vec<(String, usize, source_page::KernelSource)> = Vec::new();
    for (k, name) in kernels.into_iter().zip(launched) {
        if !request.wants_kernel(name) {
            continue;
        }
        match merged.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, launches, into)) => {
                *launches += 1;
                into.absorb(k);
            }
            None => merged.push((name.to_string(), 1, k)),
        }
    }
    Ok(merged
        .into_iter()
        .map(|(name, launches, k)| {
            let mut hotspots = source_page::hot_lines(&k, TOP_LINES);
            hotspots.kernel = name;
            if k.lines.is_empty() {
                hotspots.note = Some(NO_LINES.into());
            }
            ProgramKernel { launches, hotspots }
        })
        .collect())
}

/// Why a kernel of a program has no source lines on ncu's page.
const NO_LINES: &str = "ncu has no CUDA source lines for it: build the program with `nvcc -lineinfo` (cuBLAS's and other libraries' kernels have none)";

/// ncu's source page of a report as CSV: per kernel, every CUDA source line with its counters.
pub fn export_source(ncu: &Ncu, report: &Path) -> Result<String, ProfilerError> {
    let export_error = |said: String| ProfilerError::Export {
        report: report.to_path_buf(),
        said,
        version: ncu.version.clone(),
    };
    let finished = process::run(
        ncu.command().args(source_export_args(report)),
        &process::Output::Stdout,
        None,
    )
    .map_err(|e| export_error(e.to_string()))?;
    if !finished.status.success() || finished.text.trim().is_empty() {
        let said = format!("{}{}", finished.text.trim(), finished.stderr.trim());
        return Err(export_error(
            said.lines().last().unwrap_or("no output").to_string(),
        ));
    }
    Ok(finished.text)
}

/// `ncu --import REPORT --page source --csv --print-source cuda,sass`: each CUDA line with its
/// counters summed over its SASS instructions by ncu itself (`cuda` alone prints only the files'
/// text, no counters, with ncu 2025.3).
pub fn source_export_args(report: &Path) -> Vec<String> {
    vec![
        "--import".into(),
        report.display().to_string(),
        "--page".into(),
        "source".into(),
        "--csv".into(),
        "--print-source".into(),
        "cuda,sass".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::assign::tests::job;
    use super::*;
    use crate::parse::source_page::{KernelSource, SourceLine};

    fn kernel(name: &str, samples: f64) -> KernelSource {
        KernelSource {
            kernel: name.into(),
            lines: vec![SourceLine {
                file: "k.cu".into(),
                line: 7,
                source: "out[i] = in[i];".into(),
                values: [(source_page::SAMPLES.to_string(), samples)].into(),
            }],
        }
    }

    /// A stand-in ncu: a session writes an empty report where `--export` says; an import prints
    /// the real source page of the H200 capture.
    fn fake_ncu(dir: &Path) -> Ncu {
        let page = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ncu-source/transpose-h200.csv"
        );
        let script = format!(
            "#!/bin/sh\necho \"$@\" >> {dir}/calls\ncase \"$*\" in *--page*) cat {page};; *) while [ $# -gt 0 ]; do [ \"$1\" = --export ] && : > \"$2.ncu-rep\"; shift; done;; esac\n",
            dir = dir.display()
        );
        let path = dir.join("ncu");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        Ncu {
            path,
            version: "Version 2025.3.1.0 (stand-in)".into(),
        }
    }

    fn job_of(id: &str, kernel: &str) -> JobSpec {
        let mut j = job(id, 1);
        j.launches[0].kernel = kernel.into();
        j
    }

    #[test]
    fn a_session_runs_ncu_once_and_gives_each_job_its_kernels_lines_from_the_source_page() {
        let d = tempfile::tempdir().unwrap();
        let ncu = fake_ncu(d.path());
        let jobs = [
            job_of("naive_column", "naive_column"),
            job_of("smem_32", "smem_tile"),
            job_of("smem_pad_32", "smem_tile"),
        ];
        let refs: Vec<&JobSpec> = jobs.iter().collect();
        let got = collect(&HotspotSession {
            ncu: &ncu,
            target: vec!["/bin/true".into()],
            jobs: &refs,
            clock_control: ClockControl::None,
            dir: d.path(),
            name: "profile-0-hotspots".into(),
            timeout: Duration::from_secs(30),
        });
        let calls = std::fs::read_to_string(d.path().join("calls")).unwrap();
        let calls: Vec<&str> = calls.lines().collect();
        assert_eq!(calls.len(), 2, "{calls:?} {got:?}");
        assert!(
            calls[0]
                .contains("--section SourceCounters --section WarpStateStats --import-source yes")
                && calls[0].ends_with("/bin/true")
        );
        assert!(calls[1].ends_with("--page source --csv --print-source cuda,sass"));
        assert!(
            got.iter().all(|h| h.error.is_none()
                && h.report_file.as_deref() == Some("profile-0-hotspots.ncu-rep")),
            "{got:?}"
        );
        assert_eq!(got[0].kernels[0].lines[0].line, 108);
        let ways = |h: &Hotspots| {
            h.kernels[0]
                .lines
                .iter()
                .find(|l| l.line == 185)
                .and_then(|l| l.bank_conflict_ways())
        };
        assert_eq!((ways(&got[1]), ways(&got[2])), (Some(32.0), Some(1.0)));
        assert!(d.path().join("profile-0-hotspots.source.csv").is_file());
    }

    #[test]
    fn a_session_that_writes_no_report_leaves_every_job_with_why() {
        let d = tempfile::tempdir().unwrap();
        let mut ncu = fake_ncu(d.path());
        ncu.path = "/bin/true".into();
        let a = job("a", 1);
        let got = collect(&HotspotSession {
            ncu: &ncu,
            target: vec!["/bin/true".into()],
            jobs: &[&a],
            clock_control: ClockControl::None,
            dir: d.path(),
            name: "p-hotspots".into(),
            timeout: Duration::from_secs(30),
        });
        assert!(
            got[0]
                .error
                .as_deref()
                .is_some_and(|e| e.contains("wrote no report")),
            "{got:?}"
        );
    }

    #[test]
    fn a_request_without_names_wants_every_job_and_names_the_variants_it_does_not_find() {
        let (a, b) = (job("a", 1), job("b", 1));
        let all = HotspotRequest::new(vec![String::new()]);
        assert!(all.wants(&a) && all.wants(&b));
        assert!(all.unmatched([&a, &b].into_iter()).is_empty());
        let some = HotspotRequest::new(vec!["b".into(), " zz ".into()]);
        assert!(!some.wants(&a) && some.wants(&b));
        assert_eq!(some.unmatched([&a, &b].into_iter()), ["zz"]);
    }

    #[test]
    fn the_session_asks_for_both_sections_the_source_and_the_clocks_as_given() {
        let a = session_args(ClockControl::None, Path::new("/r/p-hotspots")).join(" ");
        assert_eq!(
            a,
            "--clock-control none --section SourceCounters --section WarpStateStats --import-source yes --target-processes all --force-overwrite --export /r/p-hotspots"
        );
    }

    #[test]
    fn kernels_go_to_jobs_in_launch_order_and_a_mismatch_keeps_no_lines() {
        let (a, b) = (job("a", 1), job("b", 1));
        let jobs = [&a, &b];
        let got = by_job(
            &jobs,
            vec![kernel("copy", 10.0), kernel("copy", 20.0)],
            Some("p-hotspots.ncu-rep".into()),
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].kernels[0].samples, 10.0);
        assert_eq!(got[1].kernels[0].samples, 20.0);
        assert!(got.iter().all(|h| h.error.is_none()));
        let short = by_job(&jobs, vec![kernel("copy", 10.0)], None);
        assert!(
            short.iter().all(|h| h.kernels.is_empty()
                && h.error
                    .as_deref()
                    .is_some_and(|e| e.contains("has 1 kernels where the pass launched 2"))),
            "{short:?}"
        );
        let other = by_job(&jobs, vec![kernel("copy", 1.0), kernel("scale", 1.0)], None);
        assert!(
            other.iter().all(|h| h
                .error
                .as_deref()
                .is_some_and(|e| e.contains("kernel `scale`"))),
            "{other:?}"
        );
    }

    fn page() -> Vec<KernelSource> {
        source_page::parse(include_str!(
            "../../tests/fixtures/ncu-source/transpose-h200.csv"
        ))
        .unwrap()
    }

    #[test]
    fn a_programs_kernels_sum_their_launches_and_keep_the_first_launchs_order() {
        let launched = [
            "naive_column(const float *, float *, int, int)",
            "smem_tile",
            "smem_tile",
        ];
        let all = by_kernel(page(), &launched, &HotspotRequest::new(vec![])).unwrap();
        let names: Vec<(&str, usize)> = all
            .iter()
            .map(|k| (k.hotspots.kernel.as_str(), k.launches))
            .collect();
        assert_eq!(
            names,
            [
                ("naive_column(const float *, float *, int, int)", 1),
                ("smem_tile", 2)
            ]
        );
        let each: Vec<f64> = page()
            .iter()
            .map(|k| source_page::hot_lines(k, TOP_LINES).samples)
            .collect();
        assert_eq!(all[0].hotspots.samples, each[0]);
        assert_eq!(all[1].hotspots.samples, each[1] + each[2]);
        assert_eq!(all[0].hotspots.lines[0].line, 108);
        assert!(all.iter().all(|k| k.hotspots.note.is_none()));
        let one = by_kernel(
            page(),
            &launched,
            &HotspotRequest::new(vec!["smem_tile".into()]),
        )
        .unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].launches, 2);
    }

    #[test]
    fn a_program_whose_page_and_launches_disagree_gets_why() {
        let all = HotspotRequest::new(vec![]);
        let e = by_kernel(page(), &["naive_column", "smem_tile"], &all).unwrap_err();
        assert!(
            e.contains("has 3 kernels where the report profiled 2"),
            "{e}"
        );
        let e = by_kernel(page(), &["naive_column", "copy_row", "smem_tile"], &all).unwrap_err();
        assert!(
            e.contains("kernel `smem_tile` where the report profiled `copy_row`"),
            "{e}"
        );
    }

    #[test]
    fn a_kernel_without_line_info_is_listed_with_how_to_get_lines() {
        let mut kernels = page();
        kernels[0].lines.clear();
        let got = by_kernel(
            kernels,
            &["naive_column", "smem_tile", "smem_tile"],
            &HotspotRequest::new(vec![]),
        )
        .unwrap();
        assert!(got[0].hotspots.lines.is_empty());
        assert!(
            got[0]
                .hotspots
                .note
                .as_deref()
                .is_some_and(|n| n.contains("-lineinfo")),
            "{got:?}"
        );
    }

    #[test]
    fn kernels_are_named_by_function_by_instance_or_by_ncus_whole_name() {
        let tile = "void transpose_tile<1, 0>(const float *, float *, int)";
        let want =
            |names: &[&str]| HotspotRequest::new(names.iter().map(|n| n.to_string()).collect());
        assert!(want(&[]).wants_kernel(tile));
        assert!(want(&["transpose_tile"]).wants_kernel(tile));
        assert!(want(&["transpose_tile<1, 0>"]).wants_kernel(tile));
        assert!(want(&[tile]).wants_kernel(tile));
        assert!(!want(&["transpose_tile<1, 1>"]).wants_kernel(tile));
        assert!(!want(&["copy_row"]).wants_kernel(tile));
        assert_eq!(
            want(&["copy_row", "transpose_tile", "zz"])
                .unmatched_kernels(&["copy_row(const float *, float *, int)", tile]),
            ["zz"]
        );
    }
}
