//! The verdicts a job's built-in checks gave, with the inputs and the output each judged: an output byte-identical to one judged on the same inputs gets the same verdict without its reference computed again.

use std::sync::Arc;

use super::device::Gpu;
use crate::verify::{Correctness, HostData};

/// How many judged outputs a job keeps: one for the samples' inputs, one for a try's unseen ones.
const KEPT: usize = 2;

struct Verdict {
    /// The initial data of every buffer the output was judged against (held, so that no other
    /// draw can take the same address while it is kept).
    inputs: Vec<Option<Arc<HostData>>>,
    output: HostData,
    correctness: Correctness,
}

/// A job's judged outputs, newest first.
#[derive(Default)]
pub(super) struct Verdicts(Vec<Verdict>);

fn same_inputs(a: &[Option<Arc<HostData>>], b: &[Option<Arc<HostData>>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y),
            (None, None) => true,
            _ => false,
        })
}

impl Verdicts {
    /// The verdict given to exactly this output of exactly these inputs, if one was.
    pub(super) fn find(
        &self,
        inputs: &[Option<Arc<HostData>>],
        output: &HostData,
    ) -> Option<Correctness> {
        self.0
            .iter()
            .find(|v| same_inputs(&v.inputs, inputs) && v.output == *output)
            .map(|v| v.correctness.clone())
    }

    /// Keeps a verdict with a copy of its output (its host memory from the child's spares).
    pub(super) fn keep(
        &mut self,
        gpu: &Gpu,
        inputs: Vec<Option<Arc<HostData>>>,
        output: &HostData,
        correctness: &Correctness,
    ) {
        let mut copy = gpu.host.borrow_mut().spare_like(output);
        copy.as_bytes_mut().copy_from_slice(output.as_bytes());
        self.0.insert(
            0,
            Verdict {
                inputs,
                output: copy,
                correctness: correctness.clone(),
            },
        );
        if self.0.len() > KEPT
            && let Some(old) = self.0.pop()
        {
            gpu.host.borrow_mut().keep_spare(old.output);
        }
    }

    /// Gives the kept outputs' host memory to the child, for the next job it serves.
    pub(super) fn release(&mut self, gpu: &Gpu) {
        let mut host = gpu.host.borrow_mut();
        for v in self.0.drain(..) {
            host.keep_spare(v.output);
        }
    }
}
