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

/// Verifies the variant's output against its correctness spec, on fresh buffers.
pub(super) fn verify(
    gpu: &Gpu,
    spec: &JobSpec,
    loaded: &Loaded,
    bufs: &mut Buffers,
    compile: &mut Vec<CompileInfo>,
) -> Result<Option<Correctness>, RunError> {
    let elem_of = |i: usize| spec.buffers[i].elem;
    let outcome = match &spec.correctness {
        CorrectnessSpec::None => return Ok(None),
        CorrectnessSpec::SameAs {
            output,
            reference_output,
            tolerance,
        } => {
            let expected_buffer = reference_output.unwrap_or(*output);
            let expected = run_reference(gpu, spec, bufs, compile, expected_buffer)?;
            bufs.reset(gpu, spec)?;
            run_checked(
                gpu,
                loaded,
                &spec.launches,
                spec.steps.as_ref(),
                &spec.buffers,
                bufs,
                "the variant",
            )?;
            let got = bufs.download(gpu, spec, *output)?;
            let outcome = check_same(
                elem_of(expected_buffer),
                &expected,
                elem_of(*output),
                &got,
                *tolerance,
            );
            bufs.recycle(expected_buffer, expected);
            bufs.recycle(*output, got);
            outcome
        }
        // The built-in references: run the variant once on fresh buffers, compare one output with
        // what the buffers started as.
        CorrectnessSpec::Copy { output, .. }
        | CorrectnessSpec::Transpose { output, .. }
        | CorrectnessSpec::Sum { output, .. }
        | CorrectnessSpec::Matmul { output, .. }
        | CorrectnessSpec::Scan { output, .. }
        | CorrectnessSpec::Compact { output, .. }
        | CorrectnessSpec::Sort { output, .. }
        | CorrectnessSpec::Histogram { output, .. }
        | CorrectnessSpec::Function { output, .. }
        | CorrectnessSpec::Add { output, .. } => against_inputs(gpu, spec, loaded, bufs, *output)?,
        CorrectnessSpec::Softmax(r)
        | CorrectnessSpec::Layernorm(r)
        | CorrectnessSpec::Rmsnorm(r) => against_inputs(gpu, spec, loaded, bufs, r.output)?,
    };
    Ok(Some(outcome))
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

/// A built-in reference's check: the variant run once on fresh buffers, its `output` compared
/// with what the buffers started as.
fn against_inputs(
    gpu: &Gpu,
    spec: &JobSpec,
    loaded: &Loaded,
    bufs: &mut Buffers,
    output: usize,
) -> Result<Correctness, RunError> {
    let elem_of = |i: usize| spec.buffers[i].elem;
    bufs.reset(gpu, spec)?;
    run_checked(
        gpu,
        loaded,
        &spec.launches,
        spec.steps.as_ref(),
        &spec.buffers,
        bufs,
        "the variant",
    )?;
    let (elem, got) = (elem_of(output), bufs.download(gpu, spec, output)?);
    let input_elem = spec
        .correctness
        .inputs()
        .first()
        .map_or(elem, |&i| elem_of(i));
    let initial: Vec<Option<&HostData>> = bufs.initial.iter().map(Option::as_ref).collect();
    let outcome = spec
        .correctness
        .against_inputs(elem, input_elem, &initial, &got);
    bufs.recycle(output, got);
    outcome.ok_or_else(|| {
        RunError::Invalid("a check input is not initialised with random or iota data".into())
    })
}
