//! The informational commands: `devices`, `doctor`, `list`, `report`.

use std::path::Path;

use crate::device::NvmlSession;
use crate::profiler;
use crate::report;
use crate::scheduler;
use crate::store;
use crate::suite;

fn cuda_device_count() -> Result<i32, String> {
    if !crate::runner::driver_present() {
        return Err("libcuda.so not found".into());
    }
    cudarc::driver::CudaContext::device_count().map_err(|e| e.to_string())
}

pub fn devices() -> anyhow::Result<i32> {
    let nvml = NvmlSession::open();
    let count = nvml.count();
    let cuda = cuda_device_count();
    match (&count, &cuda) {
        (Err(e), Err(c)) => {
            anyhow::bail!("no GPU found: NVML: {e}; CUDA: {c}\n  fix: run on a machine with an NVIDIA GPU and its driver (`gpu-lab doctor` explains what is missing)")
        }
        _ => {}
    }
    println!("CUDA devices: {}", cuda.map(|n| n.to_string()).unwrap_or_else(|e| format!("unavailable ({e})")));
    for i in 0..count.clone().unwrap_or(0) {
        let d = nvml.info(i).map_err(anyhow::Error::msg)?;
        let s = nvml.snapshot(i).unwrap_or_default();
        println!("GPU {i}: {}  {}", d.name, d.uuid);
        println!("  compute capability {}, {} GiB, {}-bit memory bus, driver {}, CUDA {}", d.compute_capability, d.memory_total_bytes >> 30, d.bus_width_bits, d.driver, d.cuda_driver);
        let mhz = |v: Option<u32>| v.map(|v| format!("{v} MHz")).unwrap_or_else(|| "not read".into());
        println!("  clocks now: SM {}, memory {} (max {} / {} MHz); {} °C, {:.0} W", mhz(s.sm_clock_mhz), mhz(s.mem_clock_mhz), d.max_sm_clock_mhz, d.max_mem_clock_mhz, s.temperature_c.unwrap_or(0), s.power_w.unwrap_or(0.0));
        println!("  theoretical peak DRAM bandwidth: {:.0} GB/s (2 x memory clock x bus width)", d.peak_bandwidth_gbs);
    }
    match profiler::find() {
        Ok(n) => println!("ncu: {} ({})", n.path.display(), n.version),
        Err(e) => println!("ncu: {}", e.lines().next().unwrap_or("")),
    }
    Ok(0)
}

pub fn doctor() -> anyhow::Result<i32> {
    let mut failures = 0;
    let mut check = |name: &str, result: Result<String, String>| match result {
        Ok(s) => println!("ok    {name}: {s}"),
        Err(e) => {
            failures += 1;
            println!("FAIL  {name}: {e}");
        }
    };
    check("libcuda (driver API)", if crate::runner::driver_present() { Ok("loadable".into()) } else { Err("not found\n        fix: install the NVIDIA driver; libcuda.so.1 must be on the loader path".into()) });
    check("CUDA devices", cuda_device_count().and_then(|n| if n > 0 { Ok(n.to_string()) } else { Err("none".into()) }));
    check("libnvrtc (kernel compiler)", crate::build::nvrtc_version().map(|(a, b)| format!("NVRTC {a}.{b}")).map_err(|e| e.to_string()));
    let nvml = NvmlSession::open();
    check("NVML (clocks, temperature, power)", nvml.count().map(|n| format!("{n} GPU(s)")).map_err(|e| format!("{e}\n        gpu-lab still runs; reports will say that clocks were not read")));
    if let Ok(n) = nvml.count() {
        for i in 0..n {
            if let Some(s) = nvml.snapshot(i) {
                let throttled = s.is_throttled();
                check(&format!("GPU {i} clocks"), if throttled { Err(format!("throttled now: {}", s.throttle_reasons.join(", "))) } else { Ok(format!("SM {} MHz, memory {} MHz, not throttled", s.sm_clock_mhz.unwrap_or(0), s.mem_clock_mhz.unwrap_or(0))) });
            }
        }
    }
    let ncu = profiler::find();
    check("ncu (Nsight Compute)", ncu.as_ref().map(|n| format!("{} {}", n.path.display(), n.version)).map_err(|e| e.clone()));
    if let Ok(ncu) = &ncu {
        if crate::runner::driver_present() {
            check("performance counters", scheduler::probe_counter_permission(ncu, 0, std::time::Duration::from_secs(120)));
        }
    }
    Ok(if failures > 0 { 1 } else { 0 })
}

pub fn list(what: &str, suite_dirs: &[std::path::PathBuf], metrics_files: &[std::path::PathBuf]) -> anyhow::Result<i32> {
    let catalog = scheduler::catalog(metrics_files)?;
    match what {
        "metrics" => {
            for m in catalog.metrics.values() {
                println!("{:40} {}{}", m.name, m.description, if m.nvprof { " [nvprof]" } else { "" });
                println!("{:40}   = {}  where {}", "", m.formula, m.counters.iter().map(|(a, c)| format!("{a} = {c}")).collect::<Vec<_>>().join(", "));
            }
        }
        "sets" => {
            for (name, s) in &catalog.sets {
                println!("{name:12} {}\n{:12} {}", s.description, "", s.metrics.join(", "));
            }
        }
        _ => {
            let dirs = suite::search_dirs(suite_dirs);
            let found = suite::discover(&dirs);
            if found.is_empty() {
                anyhow::bail!("no suites found in {}\n  fix: run from the gpu-lab checkout, set GPU_LAB_KERNELS, or pass --suite-dir", dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "));
            }
            for (name, path) in found {
                let s = suite::load(&path)?;
                let jobs = s.jobs.clone();
                println!("{name:16} {} variants, {} jobs  {}  ({})", s.manifest.variants.len(), jobs.len(), s.manifest.suite.description, path.display());
                if what == "variants" {
                    for v in &s.manifest.variants {
                        println!("  {:28} {}", v.name, v.description);
                    }
                }
            }
        }
    }
    Ok(0)
}

pub fn report(run: &Path, format: &str, write: bool) -> anyhow::Result<i32> {
    let (data, warnings) = store::load_run(run)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let e = report::exporter(format)?;
    let text = e.render(&data)?;
    if write {
        store::write_atomic(&run.join(e.file_name()), text.as_bytes())?;
    }
    print!("{text}");
    Ok(0)
}
