//! The informational commands: `devices`, `doctor` (every requirement, each failure with its fix) and `list`.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::ListWhat;
use crate::config::Config;
use crate::device::{self, NvmlSession};
use crate::executor::protocol::bounds_target;
use crate::exit;
use crate::profiler::{self, probe};
use crate::records::TimingConfig;
use crate::store::write_json;
use crate::suite;

pub fn devices(config: &Config) -> anyhow::Result<i32> {
    let nvml = NvmlSession::open();
    let count = nvml.count();
    let cuda = device::cuda_device_count();
    if let (Err(e), Err(c)) = (&count, &cuda) {
        anyhow::bail!(
            "no GPU found: {e}; CUDA: {}\n  fix: run on a machine with an NVIDIA GPU and its driver (`gpu-lab doctor` explains what is missing)",
            c.to_string().lines().next().unwrap_or("")
        );
    }
    println!(
        "CUDA devices: {}",
        cuda.map(|n| n.to_string()).unwrap_or_else(|e| format!(
            "unavailable ({})",
            e.to_string().lines().next().unwrap_or("")
        ))
    );
    for i in 0..count.clone().unwrap_or(0) {
        let d = nvml.info(i)?;
        let s = nvml.snapshot(i).unwrap_or_default();
        println!("GPU {i}: {}  {}", d.name, d.uuid);
        println!(
            "  compute capability {}, {} GiB, {}-bit memory bus, driver {}, CUDA {}",
            d.compute_capability,
            d.memory_total_bytes >> 30,
            d.bus_width_bits,
            d.driver,
            d.cuda_driver
        );
        let mhz = |v: Option<u32>| {
            v.map(|v| format!("{v} MHz"))
                .unwrap_or_else(|| "not read".into())
        };
        println!(
            "  clocks now: SM {}, memory {} (max {} / {} MHz); {} °C, {:.0} W",
            mhz(s.sm_clock_mhz),
            mhz(s.mem_clock_mhz),
            d.max_sm_clock_mhz,
            d.max_mem_clock_mhz,
            s.temperature_c.unwrap_or(0),
            s.power_w.unwrap_or(0.0)
        );
        println!(
            "  theoretical peak DRAM bandwidth: {:.0} GB/s (2 x memory clock x bus width)",
            d.peak_bandwidth_gbs
        );
    }
    match profiler::find(&config.ncu) {
        Ok(n) => println!("ncu: {} ({})", n.path.display(), n.version),
        Err(e) => println!("ncu: {}", e.to_string().lines().next().unwrap_or("")),
    }
    Ok(exit::OK)
}

/// Whether ncu may read the counters: it profiles one launch of this binary's copy kernel, in a scratch directory.
fn probe_counters(config: &Config, ncu: &profiler::Ncu) -> Result<String, String> {
    let result = (|| -> anyhow::Result<Result<String, String>> {
        // An unpredictable name, made exclusively: a name guessed from the process id could be
        // planted in a shared temp directory; removed when dropped.
        std::fs::create_dir_all(&config.temp_dir)?;
        let scratch = tempfile::Builder::new()
            .prefix("gpu-lab-doctor-")
            .tempdir_in(&config.temp_dir)?;
        let dir = scratch.path();
        let timing = dir.join("timing.json");
        write_json(
            &timing,
            &TimingConfig {
                max_seconds: 0.05,
                min_samples: 1,
                ..TimingConfig::default()
            },
        )?;
        let target = bounds_target(
            &config.exe,
            0,
            config.cache_dir.as_deref(),
            1 << 20,
            &dir.join("bounds.json"),
            &timing,
        );
        Ok(
            probe::counters_readable(ncu, &target, dir, Duration::from_secs(120))
                .map_err(|e| e.to_string()),
        )
    })();
    result.unwrap_or_else(|e| Err(format!("could not run the probe: {e:#}")))
}

/// `doctor`'s lines: each requirement `ok` or `FAIL` (with its fix), counting the failures.
#[derive(Default)]
struct Checks {
    failures: usize,
}

impl Checks {
    fn check(&mut self, name: &str, result: Result<String, String>) {
        match result {
            Ok(s) => println!("ok    {name}: {s}"),
            Err(e) => {
                self.failures += 1;
                println!("FAIL  {name}: {e}");
            }
        }
    }
}

pub fn doctor(config: &Config) -> anyhow::Result<i32> {
    let mut checks = Checks::default();
    let cuda = device::cuda_device_count();
    checks.check(
        "libcuda (driver API)",
        if device::driver_present() {
            Ok("loadable".into())
        } else {
            Err("not found\n        fix: install the NVIDIA driver; libcuda.so.1 must be on the loader path".into())
        },
    );
    checks.check(
        "CUDA devices",
        match &cuda {
            Ok(0) => Err("none".into()),
            Ok(n) => Ok(n.to_string()),
            Err(e) => Err(e.to_string()),
        },
    );
    check_toolkit(&mut checks);
    check_nvml(&mut checks);
    let ncu = profiler::find(&config.ncu);
    checks.check(
        "ncu (Nsight Compute)",
        ncu.as_ref()
            .map(|n| format!("{} {}", n.path.display(), n.version))
            .map_err(|e| e.to_string()),
    );
    if let (Ok(ncu), Ok(n)) = (&ncu, &cuda)
        && *n > 0
    {
        checks.check("performance counters", probe_counters(config, ncu));
    }
    Ok(if checks.failures > 0 {
        exit::ERROR
    } else {
        exit::OK
    })
}

/// The compilers and the toolkit: NVRTC and the headers are needed by every build; nvcc and the
/// device runtime only by some variants, so their absence is a note.
fn check_toolkit(checks: &mut Checks) {
    checks.check(
        "libnvrtc (kernel compiler)",
        crate::build::nvrtc_version()
            .map(|(a, b)| format!("NVRTC {a}.{b}"))
            .map_err(|e| e.to_string()),
    );
    let toolkit = crate::config::toolkit(&crate::config::Environment::current());
    checks.check("CUDA toolkit headers (cuda_fp16.h, cub/, cuda/std/ for NVRTC)", match toolkit.include_dirs() {
        dirs if dirs.is_empty() => Err("not found\n        fix: install the CUDA toolkit, or set CUDA_HOME to it; only header-free kernels build without it".into()),
        dirs => Ok(dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")),
    });
    // nvcc is needed only by variants with compiler = "nvcc": its absence is a note, not a failure.
    match toolkit.nvcc.as_ref().map(|n| crate::build::nvcc_version(n)) {
        Some(Ok(v)) => println!("ok    nvcc (for compiler = \"nvcc\"): {v}"),
        Some(Err(e)) => println!("note  nvcc (for compiler = \"nvcc\"): {e}"),
        None => println!(
            "note  nvcc (for compiler = \"nvcc\"): not found; variants built with NVRTC are unaffected"
        ),
    }
    // The device runtime is needed only by variants with rdc = true (kernels that launch kernels).
    match toolkit.device_runtime() {
        Some(lib) => println!(
            "ok    libcudadevrt (for rdc = true, dynamic parallelism): {}",
            lib.display()
        ),
        None => println!(
            "note  libcudadevrt (for rdc = true, dynamic parallelism): not found{}; other variants are unaffected",
            match toolkit.device_runtime_candidates() {
                c if c.is_empty() => String::new(),
                c => format!(
                    " (looked for {})",
                    c.iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        ),
    }
}

/// NVML, and each GPU's clocks: throttled now is a failure.
fn check_nvml(checks: &mut Checks) {
    let nvml = NvmlSession::open();
    checks.check(
        "NVML (clocks, temperature, power)",
        nvml.count().map(|n| format!("{n} GPU(s)")).map_err(|e| {
            format!("{e}\n        gpu-lab still runs; reports will say that clocks were not read")
        }),
    );
    if let Ok(n) = nvml.count() {
        for i in 0..n {
            if let Some(s) = nvml.snapshot(i) {
                checks.check(
                    &format!("GPU {i} clocks"),
                    if s.is_throttled() {
                        Err(format!("throttled now: {}", s.throttle_reasons.join(", ")))
                    } else {
                        Ok(format!(
                            "SM {} MHz, memory {} MHz, not throttled",
                            s.sm_clock_mhz.unwrap_or(0),
                            s.mem_clock_mhz.unwrap_or(0)
                        ))
                    },
                );
            }
        }
    }
}

pub fn list(
    config: &Config,
    what: ListWhat,
    suite_dirs: &[PathBuf],
    only: &[String],
) -> anyhow::Result<i32> {
    match what {
        ListWhat::Metrics => {
            for m in config.catalog()?.metrics.values() {
                println!(
                    "{:40} {}{}",
                    m.name,
                    m.description,
                    if m.nvprof { " [nvprof]" } else { "" }
                );
                println!(
                    "{:40}   = {}  where {}",
                    "",
                    m.formula,
                    m.counters
                        .iter()
                        .map(|(a, c)| format!("{a} = {c}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        ListWhat::Sets => {
            for (name, s) in &config.catalog()?.sets {
                println!(
                    "{name:12} {}\n{:12} {}",
                    s.description,
                    "",
                    s.metrics.join(", ")
                );
            }
        }
        ListWhat::Suites | ListWhat::Variants => {
            let dirs = config.suite_search(suite_dirs)?;
            let mut found = suite::discover(&dirs);
            if let Some(missing) = only.iter().find(|n| !found.contains_key(*n)) {
                anyhow::bail!(
                    "no suite named `{missing}`; suites found: {}\n  fix: pick one of those, or add --suite-dir DIR",
                    found.keys().cloned().collect::<Vec<_>>().join(", ")
                );
            }
            if !only.is_empty() {
                found.retain(|name, _| only.contains(name));
            }
            if found.is_empty() {
                anyhow::bail!(
                    "no suites found in {}\n  fix: run from the gpu-lab checkout, set GPU_LAB_KERNELS, or pass --suite-dir",
                    dirs.iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            for (name, path) in found {
                let s = suite::load(&path)?;
                println!(
                    "{name:16} {} variants, {} jobs  {}  ({})",
                    s.manifest.variants.len(),
                    s.jobs.len(),
                    s.manifest.suite.description,
                    path.display()
                );
                if what == ListWhat::Variants {
                    for v in &s.manifest.variants {
                        println!("  {:28} {}", v.name, v.description);
                    }
                }
            }
        }
    }
    Ok(exit::OK)
}
