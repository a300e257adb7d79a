//! A suite's programs compiled ahead of its jobs, on all cores, into the build cache: each job then loads its module from the cache instead of compiling on its own turn.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::device::Gpu;
use crate::build;
use crate::suite::{JobSpec, LaunchSpec, Program};

/// One build: a program, the variant it is built for (named in errors) and its kernels.
struct Build<'a> {
    program: &'a Program,
    variant: &'a str,
    kernels: Vec<String>,
}

/// The kernel names a job's launches need, as `loading::load` asks for them.
fn kernels_of(launches: &[LaunchSpec]) -> Vec<String> {
    let mut kernels: Vec<String> = launches.iter().map(|l| l.kernel.clone()).collect();
    kernels.sort();
    kernels.dedup();
    kernels
}

/// The distinct builds the jobs need: their own programs and their reference variants'.
fn builds(specs: &[JobSpec]) -> Vec<Build<'_>> {
    let wanted = specs.iter().flat_map(|s| {
        std::iter::once((&s.program, s.key.variant.as_str(), &s.launches)).chain(
            s.reference
                .as_ref()
                .map(|r| (&r.program, r.variant.as_str(), &r.launches)),
        )
    });
    let mut seen = HashSet::new();
    wanted
        .filter_map(|(program, variant, launches)| {
            let kernels = kernels_of(launches);
            (!kernels.is_empty() && seen.insert((program, kernels.clone()))).then_some(Build {
                program,
                variant,
                kernels,
            })
        })
        .collect()
}

/// Compiles every build the jobs need into the GPU's build cache, on all cores; how many
/// compiled. Nothing without a cache; a build that fails is left for its job to fail with.
pub fn prebuild(gpu: &Gpu, specs: &[JobSpec]) -> usize {
    let Some(cache) = gpu.cache_dir.as_deref() else {
        return 0;
    };
    let builds = builds(specs);
    let (arch, toolkit) = (gpu.arch.as_str(), &gpu.toolkit);
    let (next, built) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads.min(builds.len()) {
            s.spawn(|| {
                while let Some(b) = builds.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let compiled = build::compile(
                        b.program,
                        b.variant,
                        &b.kernels,
                        arch,
                        toolkit,
                        Some(cache),
                    );
                    if compiled.is_ok() {
                        built.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    built.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_program_and_kernel_set_is_built_once() {
        let spec = crate::profiler::assign::tests::job("copy", 4);
        let mut other_kernel = spec.clone();
        other_kernel.launches[0].kernel = "other".into();
        let specs = vec![spec.clone(), spec.clone(), other_kernel];
        let b = builds(&specs);
        assert_eq!(b.len(), 2);
        assert_eq!(b[1].kernels, vec!["other".to_string()]);
    }
}
