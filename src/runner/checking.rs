//! Checking a variant: run once and waited for, and its output compared with its reference variant's or with the built-in reference computed from the inputs.

use super::buffers::Buffers;
use super::device::Gpu;
use super::error::{Doing, RunError};
use super::launching::launch_all;
use super::loading::{Loaded, load};
use super::program::HostProgram;
use crate::records::CompileInfo;
use crate::suite::{BufferSpec, JobSpec, LaunchSpec, StepProgram};
use crate::verify::{Correctness, CorrectnessSpec, HostData, check_same};

/// Runs a variant once and waits for it: its launches, or its host program.
pub(super) fn run_checked(
    gpu: &Gpu,
    loaded: &Loaded,
    launches: &[LaunchSpec],
    steps: Option<&StepProgram>,
    buffers: &[BufferSpec],
    bufs: &Buffers,
    what: &str,
) -> Result<(), RunError> {
    if let Some(p) = steps {
        return HostProgram::new(gpu, p)?.run(loaded, launches, buffers, bufs, what);
    }
    launch_all(&gpu.stream, loaded, launches, &bufs.pointers)?;
    gpu.stream.synchronize().doing(format!(
        "running {what} (a fault here is an illegal memory access or a trap in the kernel)"
    ))
}

/// Runs a job's variant once and waits for it: [`run_checked`] with the job's own launches,
/// host program and buffers.
pub(super) fn run_spec(
    gpu: &Gpu,
    loaded: &Loaded,
    spec: &JobSpec,
    bufs: &Buffers,
    what: &str,
) -> Result<(), RunError> {
    run_checked(
        gpu,
        loaded,
        &spec.launches,
        spec.steps.as_ref(),
        &spec.buffers,
        bufs,
        what,
    )
}

/// Verifies the variant's output against its correctness spec, on fresh buffers.
pub(super) fn verify(
    gpu: &Gpu,
    spec: &JobSpec,
    loaded: &Loaded,
    bufs: &mut Buffers,
    compile: &mut Vec<CompileInfo>,
) -> Result<Option<Correctness>, RunError> {
    let (Some(output), Some(expected)) = (
        spec.correctness.output(),
        expected_output(gpu, spec, bufs, compile)?,
    ) else {
        return Ok(None);
    };
    // Run once on fresh buffers, compare the output with the expectation.
    bufs.reset(gpu, spec)?;
    run_spec(gpu, loaded, spec, bufs, "the variant")?;
    let got = bufs.download(gpu, spec, output)?;
    let outcome = compare(spec, &expected, &bufs.initial, &got);
    bufs.recycle(output, got);
    if let Expected::Reference { buffer, data } = expected {
        bufs.recycle(buffer, data);
    }
    outcome.map(Some)
}

/// What a variant's checked output is compared with.
pub(super) enum Expected {
    /// `same_as`: the reference variant's output (downloaded from `buffer`).
    Reference { buffer: usize, data: HostData },
    /// A built-in reference, computed from the initial data of the check's inputs.
    Inputs,
}

/// The expectation for the buffers' current initial data (None: no check). For `same_as`, the
/// reference variant runs once on fresh buffers; the buffers are left as it left them.
pub(super) fn expected_output(
    gpu: &Gpu,
    spec: &JobSpec,
    bufs: &mut Buffers,
    compile: &mut Vec<CompileInfo>,
) -> Result<Option<Expected>, RunError> {
    Ok(match &spec.correctness {
        CorrectnessSpec::None => None,
        CorrectnessSpec::SameAs {
            output,
            reference_output,
            ..
        } => {
            let buffer = reference_output.unwrap_or(*output);
            let data = run_reference(gpu, spec, bufs, compile, buffer)?;
            Some(Expected::Reference { buffer, data })
        }
        _ => Some(Expected::Inputs),
    })
}

/// Compares `got` (the checked output after a run) with `expected`; `initial`: the data the
/// buffers started that run from.
pub(super) fn compare(
    spec: &JobSpec,
    expected: &Expected,
    initial: &[Option<std::sync::Arc<HostData>>],
    got: &HostData,
) -> Result<Correctness, RunError> {
    let elem_of = |i: usize| spec.buffers[i].elem;
    let output = spec
        .correctness
        .output()
        .ok_or_else(|| RunError::Invalid("a comparison without a check".into()))?;
    let elem = elem_of(output);
    match (expected, &spec.correctness) {
        (Expected::Reference { buffer, data }, CorrectnessSpec::SameAs { tolerance, .. }) => {
            Ok(check_same(elem_of(*buffer), data, elem, got, *tolerance))
        }
        (Expected::Inputs, c) => {
            let input_elem = c.inputs().first().map_or(elem, |&i| elem_of(i));
            let initial: Vec<Option<&HostData>> = initial.iter().map(Option::as_deref).collect();
            c.against_inputs(elem, input_elem, &initial, got)
                .ok_or_else(|| {
                    RunError::Invalid(
                        "a check input is not initialised with random or iota data".into(),
                    )
                })
        }
        _ => Err(RunError::Invalid(
            "a reference variant's output for a built-in check".into(),
        )),
    }
}

/// The `same_as` check's expectation: the job's reference variant loaded, run once on fresh
/// buffers, and its `expected_buffer` downloaded.
fn run_reference(
    gpu: &Gpu,
    spec: &JobSpec,
    bufs: &mut Buffers,
    compile: &mut Vec<CompileInfo>,
    expected_buffer: usize,
) -> Result<HostData, RunError> {
    let r = spec
        .reference
        .as_ref()
        .ok_or_else(|| RunError::Invalid("same_as check without a reference".into()))?;
    let ref_loaded = load(
        gpu,
        &r.program,
        &r.variant,
        &r.launches,
        &spec.buffers,
        compile,
    )?;
    bufs.reset(gpu, spec)?;
    run_checked(
        gpu,
        &ref_loaded,
        &r.launches,
        r.steps.as_ref(),
        &spec.buffers,
        bufs,
        &format!("reference variant `{}`", r.variant),
    )?;
    bufs.download(gpu, spec, expected_buffer)
}
