//! What every check shares: the tally of compared elements and its outcome, and the split of a
//! check over all cores (in fixed chunks where float sums must not depend on the core count).

use crate::verify::correctness::Correctness;
use crate::verify::data::{CHUNK, is_poison, threads, value};
use crate::verify::elem::ElemType;

/// Counts compared elements, mismatches and unwritten ones, and keeps the first mismatch.
pub(super) struct Tally {
    elem: ElemType,
    pub(super) checked: u64,
    pub(super) mismatches: u64,
    pub(super) unwritten: u64,
    pub(super) first: Option<String>,
}

impl Tally {
    pub(super) fn new(elem: ElemType) -> Self {
        Tally {
            elem,
            checked: 0,
            mismatches: 0,
            unwritten: 0,
            first: None,
        }
    }

    #[inline]
    pub(super) fn exact(&mut self, got: u64, want: u64, at: impl FnOnce() -> String) {
        self.checked += 1;
        if got != want {
            self.mismatches += 1;
            if is_poison(self.elem, got) {
                self.unwritten += 1;
            }
            if self.first.is_none() {
                self.first = Some(format!(
                    "{}: got {} want {}",
                    at(),
                    value(self.elem, got),
                    value(self.elem, want)
                ));
            }
        }
    }

    /// Counts an element judged by its error against `tolerance`; a NaN error (an unwritten
    /// element, or a NaN where a number is due) fails too. The error, when it passes.
    pub(super) fn within(
        &mut self,
        err: f64,
        tolerance: f64,
        got_bits: u64,
        at: impl FnOnce() -> String,
    ) -> Option<f64> {
        self.checked += 1;
        if !err.is_nan() && err <= tolerance {
            return Some(err);
        }
        self.mismatches += 1;
        if is_poison(self.elem, got_bits) {
            self.unwritten += 1;
        }
        self.first.get_or_insert_with(at);
        None
    }

    /// Adds a later part's tally; the first mismatch stays the earliest one.
    pub(super) fn merge(mut self, later: Tally) -> Tally {
        self.checked += later.checked;
        self.mismatches += later.mismatches;
        self.unwritten += later.unwritten;
        self.first = self.first.or(later.first);
        self
    }

    pub(super) fn outcome(self) -> Correctness {
        Correctness {
            passed: self.mismatches == 0 && self.checked > 0,
            checked: self.checked,
            mismatches: self.mismatches,
            unwritten: self.unwritten,
            rel_error: 0.0,
            first_mismatch: self.first,
            max_error: None,
            elem: None,
            max_ulp: None,
        }
    }
}

/// Runs `part(start, end)` over `0..n` split into ranges on all cores; the results in order.
pub(super) fn parallel_parts<R: Send>(n: usize, part: impl Fn(usize, usize) -> R + Sync) -> Vec<R> {
    let step = n.div_ceil(threads()).max(1);
    let part = &part;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(step)
            .map(|a| s.spawn(move || part(a, (a + step).min(n))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("check thread panicked"))
            .collect()
    })
}

/// `f(start, end)` for each CHUNK-element range of `0..n`, on all cores; the results in order.
/// Ranges fixed by CHUNK, not by the core count, keep float sums the same on every machine.
pub(super) fn per_chunk<R: Send>(n: usize, f: impl Fn(usize, usize) -> R + Sync) -> Vec<R> {
    let f = &f;
    parallel_parts(n.div_ceil(CHUNK), |lo, hi| {
        (lo..hi)
            .map(|c| f(c * CHUNK, ((c + 1) * CHUNK).min(n)))
            .collect::<Vec<R>>()
    })
    .into_iter()
    .flatten()
    .collect()
}

/// Runs `part(start, end)` over `0..n` split into ranges on all cores, merging tallies in order.
pub(super) fn parallel_tally(
    elem: ElemType,
    n: usize,
    part: impl Fn(usize, usize) -> Tally + Sync,
) -> Tally {
    parallel_parts(n, part)
        .into_iter()
        .fold(Tally::new(elem), Tally::merge)
}

/// The parts' tallies merged in order into one outcome, its `rel_error` the worst part's error.
pub(super) fn merged_with_worst(elem: ElemType, parts: Vec<(Tally, f64)>) -> Correctness {
    let (t, worst) = parts
        .into_iter()
        .fold((Tally::new(elem), 0.0f64), |(t, w), (part, worst)| {
            (t.merge(part), w.max(worst))
        });
    let mut o = t.outcome();
    o.rel_error = worst;
    o
}

/// The element's bits as an integer reduced modulo 2^width (what the GPU's integer adds keep).
pub(super) fn int_mask(elem: ElemType) -> u64 {
    u64::MAX >> (64 - 8 * elem.size())
}

/// An outcome that compared nothing, and so failed; `why`, where there is a reason to give.
pub(super) fn nothing_checked(why: Option<String>) -> Correctness {
    Correctness {
        passed: false,
        checked: 0,
        mismatches: 0,
        unwritten: 0,
        rel_error: 0.0,
        first_mismatch: why,
        max_error: None,
        elem: None,
        max_ulp: None,
    }
}

/// Float32 values as a buffer, for the tests of every family.
#[cfg(test)]
pub(super) fn floats(v: &[f32]) -> crate::verify::data::HostData {
    crate::verify::data::HostData::W4(v.iter().map(|x| x.to_bits()).collect())
}
