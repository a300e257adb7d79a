//! The CPU references: does a kernel's output match what its correctness spec says (pure: no GPU, no disk).

use super::data::{CHUNK, HostData, from_value, is_poison, threads, value};
use super::{CopyMap, Correctness, ElemType, MatmulShape};

struct Tally {
    elem: ElemType,
    checked: u64,
    mismatches: u64,
    unwritten: u64,
    first: Option<String>,
}

impl Tally {
    fn new(elem: ElemType) -> Self {
        Tally {
            elem,
            checked: 0,
            mismatches: 0,
            unwritten: 0,
            first: None,
        }
    }

    #[inline]
    fn exact(&mut self, got: u64, want: u64, at: impl FnOnce() -> String) {
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
    fn within(
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
    fn merge(mut self, later: Tally) -> Tally {
        self.checked += later.checked;
        self.mismatches += later.mismatches;
        self.unwritten += later.unwritten;
        self.first = self.first.or(later.first);
        self
    }

    fn outcome(self) -> Correctness {
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
fn parallel_parts<R: Send>(n: usize, part: impl Fn(usize, usize) -> R + Sync) -> Vec<R> {
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
fn per_chunk<R: Send>(n: usize, f: impl Fn(usize, usize) -> R + Sync) -> Vec<R> {
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
fn parallel_tally(elem: ElemType, n: usize, part: impl Fn(usize, usize) -> Tally + Sync) -> Tally {
    parallel_parts(n, part)
        .into_iter()
        .fold(Tally::new(elem), Tally::merge)
}

/// The parts' tallies merged in order into one outcome, its `rel_error` the worst part's error.
fn merged_with_worst(elem: ElemType, parts: Vec<(Tally, f64)>) -> Correctness {
    let (t, worst) = parts
        .into_iter()
        .fold((Tally::new(elem), 0.0f64), |(t, w), (part, worst)| {
            (t.merge(part), w.max(worst))
        });
    let mut o = t.outcome();
    o.rel_error = worst;
    o
}

/// Element bits by index: a typed slice (loops the compiler unrolls and vectorises) or, for two
/// buffers of different widths, the `HostData` itself.
trait Words: Sync {
    fn at(&self, i: usize) -> u64;
}

impl<T: Copy + Into<u64> + Sync> Words for [T] {
    #[inline]
    fn at(&self, i: usize) -> u64 {
        self[i].into()
    }
}

impl Words for HostData {
    #[inline]
    fn at(&self, i: usize) -> u64 {
        self.word(i)
    }
}

/// Runs `$body` with `$x` and `$y` as typed slices when the two buffers have one width (on a
/// 1 GiB transpose check that halves the time), else as the buffers.
macro_rules! with_words {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (HostData::W1($x), HostData::W1($y)) => (|$x: &[u8], $y: &[u8]| $body)($x, $y),
            (HostData::W2($x), HostData::W2($y)) => (|$x: &[u16], $y: &[u16]| $body)($x, $y),
            (HostData::W4($x), HostData::W4($y)) => (|$x: &[u32], $y: &[u32]| $body)($x, $y),
            (HostData::W8($x), HostData::W8($y)) => (|$x: &[u64], $y: &[u64]| $body)($x, $y),
            ($x, $y) => $body,
        }
    };
}

/// `out` must equal `input` bit for bit over the shorter length.
pub fn check_copy(elem: ElemType, input: &HostData, out: &HostData) -> Correctness {
    check_copy_mapped(elem, input, out, CopyMap::IDENTITY)
}

/// A copy through `map`, over every element both buffers hold; elements of `out` before
/// `output_offset` are not checked.
pub fn check_copy_mapped(
    elem: ElemType,
    input: &HostData,
    out: &HostData,
    map: CopyMap,
) -> Correctness {
    let from_input = input
        .len()
        .saturating_sub(map.input_offset)
        .div_ceil(map.input_stride.max(1));
    let n = from_input.min(out.len().saturating_sub(map.output_offset));
    with_words!(input, out, |input, out| copy_tally(
        elem, input, out, map, n
    ))
    .outcome()
}

fn copy_tally(
    elem: ElemType,
    input: &(impl Words + ?Sized),
    out: &(impl Words + ?Sized),
    map: CopyMap,
    n: usize,
) -> Tally {
    parallel_tally(elem, n, |a, b| {
        let mut t = Tally::new(elem);
        for i in a..b {
            let (o, s) = (
                map.output_offset + i,
                map.input_offset + i * map.input_stride,
            );
            t.exact(out.at(o), input.at(s), || format!("out[{o}] (in[{s}])"));
        }
        t
    })
}

/// `out` (cols x rows) must be the transpose of `input` (rows x cols), bit for bit.
pub fn check_transpose(
    elem: ElemType,
    input: &HostData,
    out: &HostData,
    rows: usize,
    cols: usize,
) -> Correctness {
    with_words!(input, out, |input, out| transpose_tally(
        elem, input, out, rows, cols
    ))
    .outcome()
}

fn transpose_tally(
    elem: ElemType,
    input: &(impl Words + ?Sized),
    out: &(impl Words + ?Sized),
    rows: usize,
    cols: usize,
) -> Tally {
    // Blocked traversal: a naive column walk over a 1 GiB output takes seconds of cache misses.
    const B: usize = 64;
    parallel_tally(elem, rows.div_ceil(B), |band_a, band_b| {
        let mut t = Tally::new(elem);
        for r0 in (band_a * B..(band_b * B).min(rows)).step_by(B) {
            for c0 in (0..cols).step_by(B) {
                for r in r0..(r0 + B).min(rows) {
                    for c in c0..(c0 + B).min(cols) {
                        t.exact(out.at(c * rows + r), input.at(r * cols + c), || {
                            format!("out[{c}][{r}]")
                        });
                    }
                }
            }
        }
        t
    })
}

/// `out` must match the reference output: bit-exact when both are of one type and `tolerance`
/// is 0 or the type is an integer; value for value when the types differ and one is an integer;
/// else (floats, of one type or two: an f16 kernel against an f32 one) within `tolerance`
/// relative L2 error, measured in float64, with no element left unwritten.
pub fn check_same(
    ref_elem: ElemType,
    reference: &HostData,
    elem: ElemType,
    out: &HostData,
    tolerance: f64,
) -> Correctness {
    let floats = elem.is_float() && ref_elem.is_float();
    if ref_elem == elem && (!elem.is_float() || tolerance == 0.0) {
        return check_copy(elem, reference, out);
    }
    // Per chunk (fixed chunks: the same float sums on every machine): its tally and, over the
    // elements that compare, Σ(got - want)², Σ want², max |got - want|, max |want|.
    let parts = per_chunk(reference.len().min(out.len()), |lo, hi| {
        let mut t = Tally::new(elem);
        let mut sums = [0.0f64; 4];
        for i in lo..hi {
            let (g, w) = (out.word(i), reference.word(i));
            t.checked += 1;
            let (gv, wv) = (value(elem, g), value(ref_elem, w));
            if elem.is_float() && is_poison(elem, g) && !is_poison(ref_elem, w) {
                t.unwritten += 1;
            }
            let differs = if floats {
                gv.is_nan() != wv.is_nan() || gv.is_infinite() != wv.is_infinite()
            } else {
                gv != wv
            };
            if differs {
                t.mismatches += 1;
                t.first
                    .get_or_insert_with(|| format!("element {i}: got {gv} want {wv}"));
            } else if floats && gv.is_finite() {
                sums[0] += (gv - wv).powi(2);
                sums[1] += wv * wv;
                sums[2] = sums[2].max((gv - wv).abs());
                sums[3] = sums[3].max(wv.abs());
            }
        }
        (t, sums)
    });
    let (mut t, [mut diff2, mut ref2, mut max_diff, mut max_ref]) = (Tally::new(elem), [0.0f64; 4]);
    for (part, sums) in parts {
        t = t.merge(part);
        diff2 += sums[0];
        ref2 += sums[1];
        max_diff = max_diff.max(sums[2]);
        max_ref = max_ref.max(sums[3]);
    }
    let mut o = t.outcome();
    if !floats {
        return o;
    }
    let rel = if ref2 > 0.0 {
        (diff2 / ref2).sqrt()
    } else {
        diff2.sqrt()
    };
    o.rel_error = rel;
    o.max_error = Some(if max_ref > 0.0 {
        max_diff / max_ref
    } else {
        max_diff
    });
    o.elem = Some(elem);
    o.passed = o.passed && o.unwritten == 0 && rel <= tolerance;
    if rel > tolerance && o.first_mismatch.is_none() {
        o.first_mismatch = Some(format!(
            "relative L2 error {rel:.3e}{} above tolerance {tolerance:.1e}",
            in_eps(rel, elem)
        ));
    }
    o
}

/// ` (N eps of f16)`: an error in units of the type's epsilon, for floats.
fn in_eps(error: f64, elem: ElemType) -> String {
    let eps = elem.epsilon();
    if eps > 0.0 {
        format!(" = {:.2} eps of {}", error / eps, elem.name())
    } else {
        String::new()
    }
}

/// The first `count` elements of `out` (a reduction's partial results) must add up to the sum of
/// `input` (every `input_stride`-th element, from the first: the x fields of an array of pairs): exactly for integers (wrapping at the element width, as the GPU's adds do), and for
/// floats within `tolerance` × Σ|input| of the float64 sum (an error bound that does not blow up
/// when random signs make the sum itself small).
pub fn check_sum(
    elem: ElemType,
    input: &HostData,
    out: &HostData,
    count: usize,
    input_stride: usize,
    tolerance: f64,
) -> Correctness {
    let count = count.min(out.len());
    let stride = input_stride.max(1);
    // For integers the poison pattern is -1 (or the maximum), a legitimate partial sum: only a float's NaN says "never written".
    let unwritten = if elem.is_float() {
        (0..count).filter(|&i| is_poison(elem, out.word(i))).count() as u64
    } else {
        0
    };
    let mut o = Correctness {
        passed: false,
        checked: count as u64,
        mismatches: 0,
        unwritten,
        rel_error: 0.0,
        first_mismatch: None,
        max_error: None,
        elem: None,
        max_ulp: None,
    };
    if elem.is_float() {
        let sums = per_chunk(input.len().div_ceil(stride), |lo, hi| {
            (lo..hi)
                .map(|k| value(elem, input.word(k * stride)))
                .fold((0.0f64, 0.0f64), |(sum, scale), v| {
                    (sum + v, scale + v.abs())
                })
        });
        let (want, scale) = sums
            .into_iter()
            .fold((0.0, 0.0), |(a, b), (sum, scale)| (a + sum, b + scale));
        let got: f64 = (0..count).map(|i| value(elem, out.word(i))).sum();
        o.rel_error = if scale > 0.0 {
            (got - want).abs() / scale
        } else {
            (got - want).abs()
        };
        o.passed = count > 0 && unwritten == 0 && o.rel_error <= tolerance;
        if !o.passed {
            o.mismatches = 1;
            o.first_mismatch = Some(format!(
                "sum of {count} partials {got:e}, float64 sum of the input {want:e}: error {:.2e} of sum|x|, tolerance {tolerance:.1e}",
                o.rel_error
            ));
        }
    } else {
        let bits = 8 * elem.size() as u32;
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let signed = matches!(elem, ElemType::I32 | ElemType::I64);
        let widen = |w: u64| {
            if signed && bits == 32 {
                w as u32 as i32 as i64 as u64
            } else {
                w
            }
        };
        let wrap_sum = |d: &HostData, n: usize, step: usize| {
            per_chunk(n.div_ceil(step), |lo, hi| {
                (lo..hi).fold(0u64, |acc, k| acc.wrapping_add(widen(d.word(k * step))))
            })
            .into_iter()
            .fold(0u64, u64::wrapping_add)
                & mask
        };
        let (got, want) = (
            wrap_sum(out, count, 1),
            wrap_sum(input, input.len(), stride),
        );
        o.passed = count > 0 && got == want;
        if !o.passed {
            o.mismatches = 1;
            o.first_mismatch = Some(format!(
                "sum of {count} partials {}, sum of the input {}",
                value(elem, got),
                value(elem, want)
            ));
        }
    }
    o
}

/// Output elements a matmul check computes: all of them up to this many, else a sample of this
/// many (every row and column is hit; a 4096 x 4096 x 4096 check costs 16 M multiply-adds).
pub const MATMUL_SAMPLE: u64 = 1 << 14;

/// The positions of C that a matmul check computes: all, or a deterministic sample: a sweep that
/// reaches every row and every column, `MATMUL_SAMPLE` scattered positions, and the four corners.
fn matmul_positions(m: u64, n: u64) -> Vec<(u64, u64)> {
    if m.saturating_mul(n) <= MATMUL_SAMPLE {
        return (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    }
    // A step coprime with n walks the columns in a scattered order while t walks every row.
    let mut step = (n / 2 + 1) | 1;
    while gcd(step, n) != 1 {
        step += 2;
    }
    let sweep = (0..m.max(n)).map(|t| (t % m, (t * step) % n));
    // SplitMix64: positions spread over the whole matrix, the same on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let scattered: Vec<(u64, u64)> = (0..MATMUL_SAMPLE)
        .map(|_| (next() % m, next() % n))
        .collect();
    let mut out: Vec<(u64, u64)> = sweep
        .chain(scattered)
        .chain([(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)])
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The element type's unit roundoff.
/// The element's bits as an integer reduced modulo 2^width (what the GPU's integer adds keep).
fn int_mask(elem: ElemType) -> u64 {
    u64::MAX >> (64 - 8 * elem.size())
}

/// `out[0..count]` must be the prefix sums of `input[0..count]`: inclusive (`out[i] = x[0] + … + x[i]`)
/// or exclusive (`out[i] = x[0] + … + x[i-1]`, `out[0] = 0`). Integers exactly, wrapping at the
/// element width as the GPU's adds do; floats within `tolerance` × (|x[0]| + … + |x[i]|) of the
/// float64 prefix (the scale any order of float adds can lose precision against).
pub fn check_scan(
    elem: ElemType,
    input: &HostData,
    out: &HostData,
    count: usize,
    exclusive: bool,
    tolerance: f64,
) -> Correctness {
    let count = count.min(input.len()).min(out.len());
    // Each chunk's sums first, on all cores; then each chunk is checked from the prefix before it.
    let parts: Vec<(Tally, f64)> = if elem.is_float() {
        let sums = per_chunk(count, |lo, hi| {
            (lo..hi)
                .map(|i| value(elem, input.word(i)))
                .fold((0.0f64, 0.0f64), |(s, a), x| (s + x, a + x.abs()))
        });
        let starts: Vec<(f64, f64)> = sums
            .iter()
            .scan((0.0f64, 0.0f64), |acc, &(s, a)| {
                Some(std::mem::replace(acc, (acc.0 + s, acc.1 + a)))
            })
            .collect();
        per_chunk(count, |lo, hi| {
            let (mut t, mut worst) = (Tally::new(elem), 0.0f64);
            let (mut sum, mut scale) = starts[lo / CHUNK];
            for i in lo..hi {
                let x = value(elem, input.word(i));
                let (want, bound) = if exclusive {
                    (sum, scale)
                } else {
                    (sum + x, scale + x.abs())
                };
                let got_bits = out.word(i);
                let got = value(elem, got_bits);
                let err = if bound > 0.0 {
                    (got - want).abs() / bound
                } else {
                    (got - want).abs()
                };
                let at = || {
                    format!(
                        "out[{i}]: got {got} want {want} (error {err:.2e} of the prefix's sum|x|, tolerance {tolerance:.1e})"
                    )
                };
                if let Some(err) = t.within(err, tolerance, got_bits, at) {
                    worst = worst.max(err);
                }
                sum += x;
                scale += x.abs();
            }
            (t, worst)
        })
    } else {
        let mask = int_mask(elem);
        let sums = per_chunk(count, |lo, hi| {
            (lo..hi).fold(0u64, |acc, i| acc.wrapping_add(input.word(i)))
        });
        let starts: Vec<u64> = sums
            .iter()
            .scan(0u64, |acc, &s| {
                Some(std::mem::replace(acc, acc.wrapping_add(s)))
            })
            .collect();
        per_chunk(count, |lo, hi| {
            let (mut t, mut sum) = (Tally::new(elem), starts[lo / CHUNK]);
            for i in lo..hi {
                let x = input.word(i);
                let want = if exclusive { sum } else { sum.wrapping_add(x) } & mask;
                t.exact(out.word(i), want, || format!("out[{i}]"));
                sum = sum.wrapping_add(x);
            }
            (t, 0.0)
        })
    };
    merged_with_worst(elem, parts)
}

/// Which elements a compaction keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    /// x > 0
    Positive,
    /// x != 0
    Nonzero,
    /// whole numbers divisible by 2
    Even,
}

impl Keep {
    pub fn parse(text: &str) -> Option<Keep> {
        match text.trim() {
            "positive" => Some(Keep::Positive),
            "nonzero" => Some(Keep::Nonzero),
            "even" => Some(Keep::Even),
            _ => None,
        }
    }

    pub fn keeps(self, x: f64) -> bool {
        match self {
            Keep::Positive => x > 0.0,
            Keep::Nonzero => x != 0.0,
            Keep::Even => x.fract() == 0.0 && x.rem_euclid(2.0) == 0.0,
        }
    }
}

/// `out` must hold the elements of `input` that `keep` keeps, in their order (a stable
/// compaction), bit for bit, and nothing after them: the rest of `out` is still poison.
pub fn check_compact(elem: ElemType, input: &HostData, out: &HostData, keep: Keep) -> Correctness {
    let mut t = Tally::new(elem);
    let mut k = 0usize;
    for i in 0..input.len() {
        let x = input.word(i);
        if !keep.keeps(value(elem, x)) {
            continue;
        }
        if k >= out.len() {
            t.checked += 1;
            t.mismatches += 1;
            t.first.get_or_insert_with(|| {
                format!(
                    "the output holds {} elements, fewer than the input keeps",
                    out.len()
                )
            });
            break;
        }
        t.exact(out.word(k), x, || format!("out[{k}] (in[{i}])"));
        k += 1;
    }
    // Past the kept elements nothing may be written: a count that is too large shows here.
    for i in k..out.len() {
        t.checked += 1;
        if !is_poison(elem, out.word(i)) {
            t.mismatches += 1;
            t.first.get_or_insert_with(|| {
                format!(
                    "out[{i}] = {} is past the {k} kept elements and should be untouched",
                    value(elem, out.word(i))
                )
            });
        }
    }
    t.outcome()
}

/// `out[0..n]` must be `input[0..n]` in ascending order (a permutation of it, sorted): the CPU
/// sorts a copy and compares value for value.
pub fn check_sort(elem: ElemType, input: &HostData, out: &HostData) -> Correctness {
    let n = input.len().min(out.len());
    let mut want: Vec<(f64, u64)> = (0..n)
        .map(|i| (value(elem, input.word(i)), input.word(i)))
        .collect();
    want.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut t = Tally::new(elem);
    for (i, (_, bits)) in want.iter().enumerate() {
        t.exact(out.word(i), *bits, || format!("out[{i}]"));
    }
    t.outcome()
}

/// `out[b]` must count the elements `x` of `input` with `x mod bins == b` (whole numbers; the
/// remainder taken non-negative), exactly.
pub fn check_histogram(
    elem: ElemType,
    input: &HostData,
    out_elem: ElemType,
    out: &HostData,
    bins: usize,
) -> Correctness {
    let mut want = vec![0u64; bins];
    for i in 0..input.len() {
        let x = value(elem, input.word(i));
        want[(x.rem_euclid(bins as f64)) as usize % bins] += 1;
    }
    let mut t = Tally::new(out_elem);
    let mask = int_mask(out_elem);
    for (b, w) in want.iter().enumerate() {
        t.exact(out.word(b), w & mask, || format!("bin {b}"));
    }
    t.outcome()
}

/// A function the `function` check computes in float64.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MathFn {
    Sin,
    Cos,
    Exp,
    Log,
    Sqrt,
    Tanh,
    /// x^exponent
    Pow(f64),
}

impl MathFn {
    pub fn parse(name: &str, exponent: Option<f64>) -> Option<MathFn> {
        Some(match name.trim() {
            "sin" => MathFn::Sin,
            "cos" => MathFn::Cos,
            "exp" => MathFn::Exp,
            "log" => MathFn::Log,
            "sqrt" => MathFn::Sqrt,
            "tanh" => MathFn::Tanh,
            "pow" => MathFn::Pow(exponent?),
            _ => return None,
        })
    }

    pub fn apply(self, x: f64) -> f64 {
        match self {
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Exp => x.exp(),
            MathFn::Log => x.ln(),
            MathFn::Sqrt => x.sqrt(),
            MathFn::Tanh => x.tanh(),
            MathFn::Pow(p) => x.powf(p),
        }
    }
}

/// One unit in the last place of the type at `r`: the gap between adjacent values near r
/// (the smallest subnormal gap at and below the normal range).
fn ulp_at(elem: ElemType, r: f64) -> f64 {
    let (mantissa, min_exp) = match elem {
        ElemType::F16 => (10, -14),
        ElemType::Bf16 => (7, -126),
        ElemType::F32 => (23, -126),
        _ => (52, -1022),
    };
    let e = if r == 0.0 {
        min_exp
    } else {
        (r.abs().log2().floor() as i32).max(min_exp)
    };
    2f64.powi(e - mantissa)
}

/// `out[i]` must be `f(input[i])` within `max_ulp` units in the last place of the output type,
/// against f computed in float64; NaN must match NaN and infinities their sign. The largest error
/// found, in ULP, is the outcome's `rel_error`.
pub fn check_function(
    in_elem: ElemType,
    input: &HostData,
    elem: ElemType,
    out: &HostData,
    f: MathFn,
    max_ulp: f64,
) -> Correctness {
    let parts = parallel_parts(input.len().min(out.len()), |lo, hi| {
        let mut t = Tally::new(elem);
        let mut worst = 0.0f64;
        for i in lo..hi {
            let x = value(in_elem, input.word(i));
            // The best the output type can hold: an f16 exp(12) is +inf, correctly.
            let want = value(elem, from_value(elem, f.apply(x)));
            let got_bits = out.word(i);
            let got = value(elem, got_bits);
            t.checked += 1;
            let ulps = if want.is_nan() || got.is_nan() {
                if want.is_nan() && got.is_nan() {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else if want.is_infinite() || got.is_infinite() {
                if want == got { 0.0 } else { f64::INFINITY }
            } else {
                (got - want).abs() / ulp_at(elem, want)
            };
            if ulps > max_ulp {
                t.mismatches += 1;
                if is_poison(elem, got_bits) && !want.is_nan() {
                    t.unwritten += 1;
                }
                t.first.get_or_insert_with(|| format!("out[{i}] = {got} for x = {x}: float64 gives {want}, {ulps:.1} ulp off (at most {max_ulp} allowed)"));
            }
            if ulps.is_finite() {
                worst = worst.max(ulps);
            }
        }
        (t, worst)
    });
    let mut o = merged_with_worst(elem, parts);
    o.max_ulp = Some(o.rel_error);
    o
}

/// An integer element's value from its bits (sign-extended for the signed types).
fn int_value(elem: ElemType, bits: u64) -> i128 {
    let width = 8 * elem.size() as u32;
    if elem.is_signed() && width < 64 {
        ((bits << (64 - width)) as i64 >> (64 - width)) as i128
    } else if elem.is_signed() {
        bits as i64 as i128
    } else {
        bits as i128
    }
}

/// `out[i]` must be `a[i] + b[i]` for every element of `out` (a and b of one type, `in_elem`, and
/// at least as long). Integers exactly: the sum of the two values, wrapped at the output's width
/// (what the GPU's add and a store to a narrower type keep). Floats: the sum computed in float64
/// and rounded once to the output type, which is the correctly rounded sum a GPU add gives (float64
/// holds more than twice the bits of every narrower type, so the two roundings agree); bit for bit
/// when `tolerance` is 0, else within `tolerance` × (|a[i]| + |b[i]|). The worst error found, on
/// that scale, is the outcome's `rel_error`.
pub fn check_add(
    in_elem: ElemType,
    a: &HostData,
    b: &HostData,
    elem: ElemType,
    out: &HostData,
    tolerance: f64,
) -> Correctness {
    let n = out.len();
    if a.len() < n || b.len() < n || in_elem.is_float() != elem.is_float() {
        let why = if in_elem.is_float() != elem.is_float() {
            format!(
                "a and b are {} and the output {}: an add check compares floats with floats and integers with integers",
                in_elem.name(),
                elem.name()
            )
        } else {
            format!(
                "a holds {} and b {} elements, fewer than the output's {n}",
                a.len(),
                b.len()
            )
        };
        return Correctness {
            passed: false,
            checked: 0,
            mismatches: 0,
            unwritten: 0,
            rel_error: 0.0,
            first_mismatch: Some(why),
            max_error: None,
            elem: None,
            max_ulp: None,
        };
    }
    if !elem.is_float() {
        let mask = int_mask(elem);
        return parallel_tally(elem, n, |lo, hi| {
            let mut t = Tally::new(elem);
            for i in lo..hi {
                let want =
                    (int_value(in_elem, a.word(i)) + int_value(in_elem, b.word(i))) as u64 & mask;
                t.exact(out.word(i), want, || format!("out[{i}] (a[{i}] + b[{i}])"));
            }
            t
        })
        .outcome();
    }
    let parts = parallel_parts(n, |lo, hi| {
        let mut t = Tally::new(elem);
        let mut local = 0.0f64;
        for i in lo..hi {
            let (x, y) = (value(in_elem, a.word(i)), value(in_elem, b.word(i)));
            let want_bits = from_value(elem, x + y);
            let got_bits = out.word(i);
            if tolerance <= 0.0 {
                t.exact(got_bits, want_bits, || {
                    format!("out[{i}] (a[{i}] + b[{i}] = {x} + {y})")
                });
                continue;
            }
            let (got, want) = (value(elem, got_bits), value(elem, want_bits));
            let scale = x.abs() + y.abs();
            let err = if want.is_nan() && got.is_nan() {
                0.0
            } else if scale > 0.0 {
                (got - want).abs() / scale
            } else {
                (got - want).abs()
            };
            let at = || {
                format!(
                    "out[{i}]: got {got} want {want} = {x} + {y} (error {err:.2e} of |a| + |b|, tolerance {tolerance:.1e})"
                )
            };
            if let Some(err) = t.within(err, tolerance, got_bits, at) {
                local = local.max(err);
            }
        }
        (t, local)
    });
    merged_with_worst(elem, parts)
}

fn epsilon(elem: ElemType) -> f64 {
    elem.epsilon()
}

/// `out` must be `alpha * op(a) * op(b) + beta * c0` at every checked position (see
/// `matmul_positions`), computed here in float64. The error of an element is taken relative to
/// `|alpha| * sum |a b| + |beta * c0|`, the scale a float sum of its terms can lose precision
/// against; it may be at most `tolerance`, or, when that is 0, 2 * k * the type's epsilon (the
/// worst-case bound of a k-term float sum). The outcome's `rel_error` is the worst error seen.
pub fn check_matmul(
    elem: ElemType,
    a: &HostData,
    b: &HostData,
    c0: Option<&HostData>,
    out: &HostData,
    shape: &MatmulShape,
    tolerance: f64,
) -> Correctness {
    let MatmulShape {
        m,
        n,
        k,
        alpha,
        beta,
        ..
    } = *shape;
    let bound = if tolerance > 0.0 {
        tolerance
    } else {
        2.0 * k as f64 * epsilon(elem)
    };
    let needed = (a.len() as u64 >= m * k)
        && (b.len() as u64 >= k * n)
        && (out.len() as u64 >= m * n)
        && c0.is_none_or(|c| c.len() as u64 >= m * n);
    if !needed || m == 0 || n == 0 {
        return Correctness {
            passed: false,
            checked: 0,
            mismatches: 0,
            unwritten: 0,
            rel_error: 0.0,
            first_mismatch: Some(format!(
                "the buffers are smaller than a {} product needs",
                shape.label()
            )),
            max_error: None,
            elem: None,
            max_ulp: None,
        };
    }
    let positions = matmul_positions(m, n);
    let parts = parallel_parts(positions.len(), |lo, hi| {
        let (mut checked, mut bad, mut unwritten, mut worst, mut first) =
            (0u64, 0u64, 0u64, 0.0f64, None);
        for &(i, j) in &positions[lo..hi] {
            let (mut sum, mut scale) = (0.0f64, 0.0f64);
            for p in 0..k {
                let t = value(elem, a.word(shape.a_index(i, p) as usize))
                    * value(elem, b.word(shape.b_index(p, j) as usize));
                sum += t;
                scale += t.abs();
            }
            let c = c0
                .map(|c| value(elem, c.word((i * n + j) as usize)))
                .unwrap_or(0.0);
            let want = alpha * sum + beta * c;
            let scale = (alpha.abs() * scale + (beta * c).abs()).max(f64::MIN_POSITIVE);
            let got_bits = out.word((i * n + j) as usize);
            let got = value(elem, got_bits);
            checked += 1;
            let err = if got.is_finite() {
                (got - want).abs() / scale
            } else {
                f64::INFINITY
            };
            worst = worst.max(err);
            if err > bound || (bound == 0.0 && got != want) {
                bad += 1;
                if is_poison(elem, got_bits) {
                    unwritten += 1;
                }
                first.get_or_insert_with(|| format!("C[{i}][{j}]: got {got} want {want} (error {err:.2e} of the terms' scale, tolerance {bound:.1e})"));
            }
        }
        (checked, bad, unwritten, worst, first)
    });
    let mut o = Correctness {
        passed: false,
        checked: 0,
        mismatches: 0,
        unwritten: 0,
        rel_error: 0.0,
        first_mismatch: None,
        max_error: None,
        elem: None,
        max_ulp: None,
    };
    for (checked, bad, unwritten, worst, first) in parts {
        o.checked += checked;
        o.mismatches += bad;
        o.unwritten += unwritten;
        o.rel_error = o.rel_error.max(worst);
        o.first_mismatch = o.first_mismatch.or(first);
    }
    o.passed = o.checked > 0 && o.mismatches == 0;
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Init;
    use crate::verify::data::CHUNK;

    #[test]
    fn whole_number_floats_sum_exactly() {
        let x = HostData::init(ElemType::F32, 100_003, Init::RandomInt, 5);
        let HostData::W4(v) = &x else { panic!() };
        assert!(
            v.iter()
                .all(|&b| f32::from_bits(b).fract() == 0.0 && f32::from_bits(b).abs() <= 1000.0)
        );
        // Partials of 1000 elements summed in float32, as a block would: exact, so tolerance 0 passes...
        let partials: Vec<u32> = v
            .chunks(1000)
            .map(|c| c.iter().map(|&b| f32::from_bits(b)).sum::<f32>().to_bits())
            .collect();
        let n = partials.len();
        let mut out = HostData::W4(partials);
        assert!(check_sum(ElemType::F32, &x, &out, n, 1, 0.0).passed);
        // ...and a partial off by one unit fails it.
        if let HostData::W4(p) = &mut out {
            p[7] = (f32::from_bits(p[7]) + 1.0).to_bits();
        }
        assert!(!check_sum(ElemType::F32, &x, &out, n, 1, 0.0).passed);
    }

    #[test]
    fn mapped_copy_checks_offsets_and_strides() {
        let input = HostData::W4((0..10).collect());
        // Misaligned read by 3: out[i] = in[i + 3]; the last 3 elements of out are not checked.
        let read = HostData::W4((3..10).chain([u32::MAX; 3]).collect());
        let map = CopyMap {
            input_offset: 3,
            ..CopyMap::IDENTITY
        };
        let o = check_copy_mapped(ElemType::U32, &input, &read, map);
        assert!(o.passed && o.checked == 7, "{o:?}");
        // Misaligned write by 2: out[i + 2] = in[i].
        let write = HostData::W4([u32::MAX; 2].into_iter().chain(0..8).collect());
        let o = check_copy_mapped(
            ElemType::U32,
            &input,
            &write,
            CopyMap {
                output_offset: 2,
                ..CopyMap::IDENTITY
            },
        );
        assert!(o.passed && o.checked == 8, "{o:?}");
        // The x fields of an array of (x, y) pairs: out[i] = in[2i]; a y slipped in is caught.
        let mut xs = HostData::W4(vec![0, 2, 4, 6, 8]);
        let stride = CopyMap {
            input_stride: 2,
            ..CopyMap::IDENTITY
        };
        assert!(check_copy_mapped(ElemType::U32, &input, &xs, stride).passed);
        if let HostData::W4(v) = &mut xs {
            v[3] = 7;
        }
        let o = check_copy_mapped(ElemType::U32, &input, &xs, stride);
        assert_eq!(
            (o.passed, o.mismatches, o.first_mismatch.as_deref()),
            (false, 1, Some("out[3] (in[6]): got 7 want 6"))
        );
    }

    #[test]
    fn sum_check_is_exact_for_integers_and_bounded_for_floats() {
        let input = HostData::W4(
            [5i32, -7, 1_000_000, -3]
                .iter()
                .map(|&v| v as u32)
                .collect(),
        );
        let good = HostData::W4([-2i32, 999_997, 0].iter().map(|&v| v as u32).collect());
        assert!(check_sum(ElemType::I32, &input, &good, 2, 1, 0.0).passed);
        let off_by_one = HostData::W4([3i32, 999_995].iter().map(|&v| v as u32).collect());
        let o = check_sum(ElemType::I32, &input, &off_by_one, 2, 1, 0.0);
        assert!(!o.passed && o.first_mismatch.unwrap().contains("999998"));
        // Poisoned (unwritten) partial: counted and failing.
        let o = check_sum(
            ElemType::I32,
            &input,
            &HostData::W4(vec![2, u32::MAX]),
            2,
            1,
            0.0,
        );
        assert!(
            !o.passed && o.unwritten == 0,
            "-1 is a legitimate int partial: {o:?}"
        );

        let xs = [0.5f32, -0.25, 1e-3, -0.75];
        let input = HostData::W4(xs.iter().map(|v| v.to_bits()).collect());
        let want: f32 = xs.iter().sum();
        let near = HostData::W4(vec![(want + 1e-7).to_bits()]);
        assert!(check_sum(ElemType::F32, &input, &near, 1, 1, 1e-6).passed);
        let far = HostData::W4(vec![(want + 1e-3).to_bits()]);
        assert!(!check_sum(ElemType::F32, &input, &far, 1, 1, 1e-6).passed);
        assert!(
            !check_sum(
                ElemType::F32,
                &input,
                &HostData::W4(vec![f32::NAN.to_bits()]),
                1,
                1,
                1e-6
            )
            .passed
        );
        // Stride 2: the x fields 0.5 and 1e-3 only.
        let xs = HostData::W4(vec![(0.5f32 + 1e-3).to_bits()]);
        assert!(check_sum(ElemType::F32, &input, &xs, 1, 2, 1e-6).passed);
    }

    fn transpose_cpu(input: &HostData, rows: usize, cols: usize) -> HostData {
        let HostData::W4(v) = input else { panic!() };
        let mut out = vec![0u32; v.len()];
        for r in 0..rows {
            for c in 0..cols {
                out[c * rows + r] = v[r * cols + c];
            }
        }
        HostData::W4(out)
    }

    #[test]
    fn random_spans_chunks_and_differs_between_chunks() {
        let a = HostData::init(ElemType::F32, 2 * CHUNK + 7, Init::Random, 9);
        let HostData::W4(v) = &a else { panic!() };
        assert_ne!(
            v[..64],
            v[CHUNK..CHUNK + 64],
            "each chunk has its own stream"
        );
        assert_eq!(
            a,
            HostData::init(ElemType::F32, 2 * CHUNK + 7, Init::Random, 9)
        );
        let b = HostData::init(ElemType::I64, 1000, Init::Random, 9);
        let HostData::W8(w) = &b else { panic!() };
        assert!(w.iter().all(|&x| (-1000..1000).contains(&(x as i64))));
    }

    #[test]
    fn random_is_seeded_and_in_range() {
        let a = HostData::init(ElemType::F32, 1001, Init::Random, 7);
        assert_eq!(a, HostData::init(ElemType::F32, 1001, Init::Random, 7));
        assert_ne!(a, HostData::init(ElemType::F32, 1001, Init::Random, 8));
        let HostData::W4(v) = &a else { panic!() };
        assert!(v.iter().all(|&b| (-1.0..1.0).contains(&f32::from_bits(b))));
        // Not constant: a check on zeros would hide wrong indexing.
        assert!(v.iter().collect::<std::collections::HashSet<_>>().len() > 900);
    }

    #[test]
    fn transpose_check_accepts_the_transpose_of_a_non_square_matrix() {
        let (rows, cols) = (70, 33);
        let input = HostData::init(ElemType::F32, rows * cols, Init::Random, 1);
        let out = transpose_cpu(&input, rows, cols);
        let o = check_transpose(ElemType::F32, &input, &out, rows, cols);
        assert!(o.passed, "{o:?}");
        assert_eq!(o.checked, (rows * cols) as u64);
        // Swapping rows and cols is the classic non-square bug: it must fail.
        assert!(!check_transpose(ElemType::F32, &input, &out, cols, rows).passed);
    }

    #[test]
    fn buffers_of_one_width_or_two_are_checked_alike() {
        // Typed slices when the widths agree, the buffers' words when they differ: one verdict.
        let input = HostData::init(ElemType::U16, 4099, Init::Random, 4);
        let HostData::W2(v) = &input else { panic!() };
        let mut narrow = v.clone();
        narrow[17] ^= 1;
        let wide = HostData::W4(narrow.iter().map(|&x| x as u32).collect());
        let narrow = HostData::W2(narrow);
        for out in [&narrow, &wide] {
            let o = check_copy(ElemType::U16, &input, out);
            assert_eq!((o.passed, o.checked, o.mismatches), (false, 4099, 1));
            assert!(o.first_mismatch.unwrap().starts_with("out[17]"));
        }
    }

    #[test]
    fn a_check_split_over_cores_reports_its_earliest_mismatch() {
        let n = 2 * CHUNK + 5;
        let reference = HostData::init(ElemType::F32, n, Init::Random, 6);
        let HostData::W4(v) = &reference else {
            panic!()
        };
        let mut bad = v.clone();
        for i in [n - 1, 3] {
            bad[i] = f32::NAN.to_bits();
        }
        let o = check_same(
            ElemType::F32,
            &reference,
            ElemType::F32,
            &HostData::W4(bad),
            1e-3,
        );
        assert_eq!((o.checked, o.mismatches), (n as u64, 2));
        assert!(o.first_mismatch.unwrap().starts_with("element 3:"));
    }

    #[test]
    fn unwritten_elements_are_counted_as_poison() {
        let (rows, cols) = (8, 8);
        let input = HostData::init(ElemType::F32, 64, Init::Random, 3);
        let mut out = transpose_cpu(&input, rows, cols);
        if let HostData::W4(v) = &mut out {
            v[5] = u32::MAX;
            v[9] = u32::MAX;
        }
        let o = check_transpose(ElemType::F32, &input, &out, rows, cols);
        assert!(!o.passed);
        assert_eq!((o.mismatches, o.unwritten), (2, 2));
        assert!(o.first_mismatch.unwrap().contains("NaN"));
    }

    fn floats(v: &[f32]) -> HostData {
        HostData::W4(v.iter().map(|x| x.to_bits()).collect())
    }

    /// Row-major float64 product, for the tests: C = alpha * op(A) op(B) + beta * C0.
    fn product(a: &HostData, b: &HostData, c0: &HostData, s: &MatmulShape) -> HostData {
        let f = |d: &HostData, i: u64| value(ElemType::F32, d.word(i as usize));
        let v: Vec<f32> = (0..s.m * s.n)
            .map(|ij| {
                let (i, j) = (ij / s.n, ij % s.n);
                let sum: f64 = (0..s.k)
                    .map(|p| f(a, s.a_index(i, p)) * f(b, s.b_index(p, j)))
                    .sum();
                (s.alpha * sum + s.beta * f(c0, ij)) as f32
            })
            .collect();
        floats(&v)
    }

    #[test]
    fn matmul_check_passes_float_rounding_and_catches_one_wrong_element() {
        for (m, n, k, ta, tb) in [
            (37, 29, 53, false, false),
            (64, 1, 300, false, false),
            (40, 33, 17, true, false),
            (23, 31, 19, false, true),
            (300, 280, 64, false, false),
        ] {
            let s = MatmulShape {
                m,
                n,
                k,
                alpha: 1.5,
                beta: 0.5,
                trans_a: ta,
                trans_b: tb,
            };
            let a = HostData::init(ElemType::F32, (m * k) as usize, Init::Random, 1);
            let b = HostData::init(ElemType::F32, (k * n) as usize, Init::Random, 2);
            let c0 = HostData::init(ElemType::F32, (m * n) as usize, Init::Random, 3);
            let mut out = product(&a, &b, &c0, &s);
            let o = check_matmul(ElemType::F32, &a, &b, Some(&c0), &out, &s, 0.0);
            assert!(
                o.passed && o.rel_error < 2.0 * k as f64 * f32::EPSILON as f64,
                "{s:?}: {o:?}"
            );
            assert_eq!(o.checked as usize, matmul_positions(m, n).len());
            assert!(
                o.checked == m * n
                    || (o.checked >= m.max(n) && o.checked <= MATMUL_SAMPLE + 4 + m.max(n))
            );
            // One element off by a little more than float rounding allows: caught (where sampled).
            let HostData::W4(v) = &mut out else { panic!() };
            let at = (m * n - 1) as usize;
            v[at] = (f32::from_bits(v[at]) + 0.01).to_bits();
            let o = check_matmul(ElemType::F32, &a, &b, Some(&c0), &out, &s, 0.0);
            assert!(
                !o.passed
                    && o.mismatches == 1
                    && o.first_mismatch.as_deref().unwrap().starts_with(&format!(
                        "C[{}][{}]",
                        m - 1,
                        n - 1
                    )),
                "{o:?}"
            );
            // Forgetting beta * C is wrong too.
            let o = check_matmul(
                ElemType::F32,
                &a,
                &b,
                None,
                &product(&a, &b, &c0, &s),
                &s,
                0.0,
            );
            assert!(!o.passed);
        }
    }

    #[test]
    fn a_large_matmul_check_samples_every_row_and_column() {
        let (m, n) = (4096u64, 4000u64);
        let p = matmul_positions(m, n);
        let rows: std::collections::HashSet<u64> = p.iter().map(|x| x.0).collect();
        let cols: std::collections::HashSet<u64> = p.iter().map(|x| x.1).collect();
        assert_eq!((rows.len() as u64, cols.len() as u64), (m, n));
        assert!(
            p.len() as u64 <= MATMUL_SAMPLE + 4 + m.max(n) && p.len() as u64 > MATMUL_SAMPLE,
            "{}",
            p.len()
        );
        // Square shapes too: the sweep and the scattered sample do not fold onto each other.
        assert!(matmul_positions(4096, 4096).len() as u64 > MATMUL_SAMPLE);
        // Poisoned (never written) output is counted as unwritten.
        let s = MatmulShape {
            m: 2,
            n: 2,
            k: 2,
            alpha: 1.0,
            beta: 0.0,
            trans_a: false,
            trans_b: false,
        };
        let ones = floats(&[1.0; 4]);
        let o = check_matmul(
            ElemType::F32,
            &ones,
            &ones,
            None,
            &HostData::W4(vec![u32::MAX; 4]),
            &s,
            0.0,
        );
        assert_eq!((o.passed, o.unwritten), (false, 4));
        let short = check_matmul(ElemType::F32, &ones, &ones, None, &floats(&[2.0]), &s, 0.0);
        assert!(!short.passed && short.first_mismatch.unwrap().contains("smaller"));
    }

    #[test]
    fn same_as_with_tolerance() {
        let r = HostData::W4(vec![1.0f32.to_bits(), 2.0f32.to_bits()]);
        let near = HostData::W4(vec![1.0001f32.to_bits(), 2.0f32.to_bits()]);
        assert!(check_same(ElemType::F32, &r, ElemType::F32, &near, 1e-3).passed);
        assert!(!check_same(ElemType::F32, &r, ElemType::F32, &near, 1e-6).passed);
        assert!(!check_same(ElemType::F32, &r, ElemType::F32, &near, 0.0).passed);
        let ints = HostData::W4(vec![5, 6]);
        assert!(check_same(ElemType::I32, &ints, ElemType::I32, &ints.clone(), 0.5).passed);
    }

    #[test]
    fn half_outputs_are_checked_against_float32_in_units_of_their_epsilon() {
        let want = [1.0f32, -0.3333333, 0.7, 1000.5];
        let reference = floats(&want);
        // The float32 values rounded to f16: within half an f16 epsilon of each, relative.
        let halves = reference.converted(ElemType::F32, ElemType::F16);
        let o = check_same(
            ElemType::F32,
            &reference,
            ElemType::F16,
            &halves,
            2.0 * ElemType::F16.epsilon(),
        );
        assert!(o.passed, "{o:?}");
        let in_eps = o.error_in_eps().unwrap();
        assert!(
            in_eps > 0.0 && in_eps <= 0.5,
            "rounding to nearest is at most half an epsilon: {in_eps}"
        );
        assert_eq!(o.elem, Some(ElemType::F16));
        // bf16 has 3 fewer mantissa bits: the same values fail an f16-sized tolerance.
        // 1 + 3/256 needs 8 mantissa bits: f16 holds it, bf16 (7 bits) is off by 1/256.
        let fine = floats(&[1.011_718_8; 4]);
        let bf = fine.converted(ElemType::F32, ElemType::Bf16);
        assert!(
            check_same(
                ElemType::F32,
                &fine,
                ElemType::F16,
                &fine.converted(ElemType::F32, ElemType::F16),
                0.0 + 1e-12
            )
            .passed
        );
        assert!(
            !check_same(
                ElemType::F32,
                &fine,
                ElemType::Bf16,
                &bf,
                2.0 * ElemType::F16.epsilon()
            )
            .passed
        );
        assert!(
            check_same(
                ElemType::F32,
                &fine,
                ElemType::Bf16,
                &bf,
                2.0 * ElemType::Bf16.epsilon()
            )
            .passed
        );
        // An f16 element never written (0xFFFF, a NaN) is a mismatch and counted unwritten.
        let mut unwritten = halves.clone();
        if let HostData::W2(v) = &mut unwritten {
            v[1] = u16::MAX;
        }
        let o = check_same(ElemType::F32, &reference, ElemType::F16, &unwritten, 1.0);
        assert_eq!((o.passed, o.unwritten, o.mismatches), (false, 1, 1));
        // Integers of two widths compare by value.
        let small = HostData::W1(vec![5u8, 250]);
        let wide = HostData::W4(vec![5, (-6i32) as u32]);
        assert!(check_same(ElemType::I32, &wide, ElemType::I8, &small, 0.0).passed);
        assert!(!check_same(ElemType::I32, &wide, ElemType::U8, &small, 0.0).passed);
    }

    #[test]
    fn scans_inclusive_and_exclusive_integers_exact_floats_by_tolerance() {
        let x = HostData::W4([3i32, -1, 4, 1, -5].iter().map(|&v| v as u32).collect());
        let inclusive = HostData::W4([3i32, 2, 6, 7, 2].iter().map(|&v| v as u32).collect());
        let exclusive = HostData::W4([0i32, 3, 2, 6, 7].iter().map(|&v| v as u32).collect());
        assert!(check_scan(ElemType::I32, &x, &inclusive, 5, false, 0.0).passed);
        assert!(check_scan(ElemType::I32, &x, &exclusive, 5, true, 0.0).passed);
        let o = check_scan(ElemType::I32, &x, &exclusive, 5, false, 0.0);
        assert!(!o.passed && o.first_mismatch.unwrap().starts_with("out[0]"));
        // Only `count` elements are checked: a partial scan of a longer buffer.
        assert!(check_scan(ElemType::I32, &x, &inclusive, 3, false, 0.0).passed);
        // u8 prefixes wrap at 256, as the GPU's adds do.
        let bytes = HostData::W1(vec![200, 100]);
        assert!(
            check_scan(
                ElemType::U8,
                &bytes,
                &HostData::W1(vec![200, 44]),
                2,
                false,
                0.0
            )
            .passed
        );
        let fx = floats(&[0.1, 0.2, 0.3]);
        let near = floats(&[0.1, 0.3000001, 0.6]);
        assert!(check_scan(ElemType::F32, &fx, &near, 3, false, 1e-6).passed);
        assert!(
            !check_scan(
                ElemType::F32,
                &fx,
                &floats(&[0.1, 0.3, 0.7]),
                3,
                false,
                1e-6
            )
            .passed
        );
        // An unwritten (NaN) element never passes a tolerance.
        let o = check_scan(
            ElemType::F32,
            &fx,
            &HostData::W4(vec![0.1f32.to_bits(), u32::MAX, 0.6f32.to_bits()]),
            3,
            false,
            1.0,
        );
        assert_eq!((o.passed, o.unwritten), (false, 1));
    }

    #[test]
    fn scans_and_sums_over_many_chunks_carry_each_chunks_prefix() {
        let n = 2 * CHUNK + 5;
        let x = HostData::init(ElemType::I32, n, Init::Random, 8);
        let HostData::W4(v) = &x else { panic!() };
        let mut prefix: Vec<u32> = v
            .iter()
            .scan(0u32, |s, &e| Some(std::mem::replace(s, s.wrapping_add(e))))
            .collect();
        assert!(
            check_scan(
                ElemType::I32,
                &x,
                &HostData::W4(prefix.clone()),
                n,
                true,
                0.0
            )
            .passed
        );
        prefix[CHUNK + 9] ^= 4;
        let o = check_scan(ElemType::I32, &x, &HostData::W4(prefix), n, true, 0.0);
        assert_eq!(o.mismatches, 1);
        assert!(
            o.first_mismatch
                .unwrap()
                .starts_with(&format!("out[{}]", CHUNK + 9))
        );
        let f = HostData::init(ElemType::F32, n, Init::Random, 8);
        let HostData::W4(fv) = &f else { panic!() };
        let inclusive: Vec<u32> = fv
            .iter()
            .scan(0.0f64, |s, &e| {
                *s += f32::from_bits(e) as f64;
                Some((*s as f32).to_bits())
            })
            .collect();
        assert!(check_scan(ElemType::F32, &f, &HostData::W4(inclusive), n, false, 1e-6).passed);
        // A sum over every other element of many chunks: exact for integers, one partial holding it all.
        let total = v.iter().step_by(2).fold(0u32, |s, &e| s.wrapping_add(e));
        assert!(check_sum(ElemType::I32, &x, &HostData::W4(vec![total]), 1, 2, 0.0).passed);
        assert!(!check_sum(ElemType::I32, &x, &HostData::W4(vec![total ^ 1]), 1, 2, 0.0).passed);
    }

    #[test]
    fn compaction_is_stable_and_writes_nothing_past_the_kept_elements() {
        let x = HostData::W4([5i32, -2, 0, 7, 3, -1].iter().map(|&v| v as u32).collect());
        let mut out = HostData::W4(vec![u32::MAX; 6]);
        if let HostData::W4(v) = &mut out {
            v[..3].copy_from_slice(&[5, 7, 3]);
        }
        assert!(check_compact(ElemType::I32, &x, &out, Keep::Positive).passed);
        let mut reordered = out.clone();
        if let HostData::W4(v) = &mut reordered {
            v[..3].copy_from_slice(&[7, 5, 3]);
        }
        assert!(
            !check_compact(ElemType::I32, &x, &reordered, Keep::Positive).passed,
            "order matters"
        );
        let mut too_many = out.clone();
        if let HostData::W4(v) = &mut too_many {
            v[3] = 0;
        }
        let o = check_compact(ElemType::I32, &x, &too_many, Keep::Positive);
        assert!(!o.passed && o.first_mismatch.unwrap().contains("past the 3 kept"));
        assert_eq!(Keep::parse("even"), Some(Keep::Even));
        assert!(Keep::Even.keeps(-4.0) && !Keep::Even.keeps(3.0) && Keep::Nonzero.keeps(-1.0));
    }

    #[test]
    fn sorts_and_histograms() {
        let x = HostData::W4([3i32, -1, 4, 1, -5].iter().map(|&v| v as u32).collect());
        let sorted = HostData::W4([-5i32, -1, 1, 3, 4].iter().map(|&v| v as u32).collect());
        assert!(check_sort(ElemType::I32, &x, &sorted).passed);
        assert!(!check_sort(ElemType::I32, &x, &x).passed);
        // Bins of x mod 3 (non-negative remainder): 3 -> 0, -1 -> 2, 4 -> 1, 1 -> 1, -5 -> 1.
        let h = HostData::W4(vec![1, 3, 1]);
        assert!(check_histogram(ElemType::I32, &x, ElemType::U32, &h, 3).passed);
        assert!(
            !check_histogram(
                ElemType::I32,
                &x,
                ElemType::U32,
                &HostData::W4(vec![1, 2, 2]),
                3
            )
            .passed
        );
    }

    #[test]
    fn adds_are_checked_element_by_element_and_name_the_first_wrong_one() {
        let a = HostData::init(ElemType::F32, 10_007, Init::Random, 1);
        let b = HostData::init(ElemType::F32, 10_007, Init::Random, 2);
        let (HostData::W4(x), HostData::W4(y)) = (&a, &b) else {
            panic!()
        };
        let sums: Vec<u32> = x
            .iter()
            .zip(y)
            .map(|(p, q)| (f32::from_bits(*p) + f32::from_bits(*q)).to_bits())
            .collect();
        // float32 adds on the host are what the GPU's adds give: bit for bit.
        let right = HostData::W4(sums.clone());
        let o = check_add(ElemType::F32, &a, &b, ElemType::F32, &right, 0.0);
        assert!(
            o.passed && o.checked == 10_007 && o.mismatches == 0,
            "{o:?}"
        );
        // One element off by one unit in the last place: found, with its index.
        let mut wrong = sums.clone();
        wrong[4321] += 1;
        let o = check_add(
            ElemType::F32,
            &a,
            &b,
            ElemType::F32,
            &HostData::W4(wrong.clone()),
            0.0,
        );
        assert_eq!(
            (o.passed, o.mismatches, o.unwritten),
            (false, 1, 0),
            "{o:?}"
        );
        assert!(
            o.first_mismatch
                .as_deref()
                .unwrap()
                .starts_with("out[4321] (a[4321] + b[4321]"),
            "{o:?}"
        );
        // ...which a tolerance of a few eps accepts, and an element never written (poison) never passes.
        assert!(
            check_add(
                ElemType::F32,
                &a,
                &b,
                ElemType::F32,
                &HostData::W4(wrong.clone()),
                4.0 * ElemType::F32.epsilon()
            )
            .passed
        );
        wrong[17] = u32::MAX;
        let o = check_add(
            ElemType::F32,
            &a,
            &b,
            ElemType::F32,
            &HostData::W4(wrong),
            1.0,
        );
        assert_eq!((o.passed, o.unwritten), (false, 1), "{o:?}");
        assert!(
            o.first_mismatch.as_deref().unwrap().starts_with("out[17]"),
            "the earliest wrong element is reported: {o:?}"
        );
        // Only the output's elements are checked: a and b may be longer, never shorter.
        let short = HostData::W4(sums[..100].to_vec());
        assert!(check_add(ElemType::F32, &a, &b, ElemType::F32, &short, 0.0).passed);
        let o = check_add(
            ElemType::F32,
            &HostData::W4(x[..99].to_vec()),
            &b,
            ElemType::F32,
            &short,
            0.0,
        );
        assert!(
            !o.passed
                && o.first_mismatch
                    .unwrap()
                    .contains("fewer than the output's 100")
        );
    }

    #[test]
    fn integer_adds_wrap_at_the_output_width_and_widen_exactly() {
        let a = HostData::W1([100i8, -100, 5, -128].iter().map(|&v| v as u8).collect());
        let b = HostData::W1([100i8, -100, -7, -1].iter().map(|&v| v as u8).collect());
        // i8 + i8 into i8 wraps: 200 -> -56, -200 -> 56, -129 -> 127.
        let wrapped = HostData::W1([-56i8, 56, -2, 127].iter().map(|&v| v as u8).collect());
        assert!(check_add(ElemType::I8, &a, &b, ElemType::I8, &wrapped, 0.0).passed);
        // Into i32 the sum is exact.
        let wide = HostData::W4([200i32, -200, -2, -129].iter().map(|&v| v as u32).collect());
        assert!(check_add(ElemType::I8, &a, &b, ElemType::I32, &wide, 0.0).passed);
        let mut off = wide.clone();
        if let HostData::W4(v) = &mut off {
            v[2] = (-3i32) as u32;
        }
        let o = check_add(ElemType::I8, &a, &b, ElemType::I32, &off, 0.0);
        assert_eq!(
            (o.passed, o.first_mismatch.as_deref()),
            (false, Some("out[2] (a[2] + b[2]): got -3 want -2"))
        );
        // u64 sums wrap at 2^64, with no rounding through float64.
        let big = HostData::W8(vec![u64::MAX - 1, (1u64 << 60) + 1]);
        let one = HostData::W8(vec![3, 1 << 60]);
        assert!(
            check_add(
                ElemType::U64,
                &big,
                &one,
                ElemType::U64,
                &HostData::W8(vec![1, (1u64 << 61) + 1]),
                0.0
            )
            .passed
        );
        // Floats against integers: refused, not compared.
        let o = check_add(
            ElemType::F32,
            &HostData::W4(vec![0]),
            &HostData::W4(vec![0]),
            ElemType::I32,
            &HostData::W4(vec![0]),
            0.0,
        );
        assert!(!o.passed && o.first_mismatch.unwrap().contains("floats with floats"));
    }

    #[test]
    fn functions_are_checked_in_ulp_of_the_output_type() {
        let xs = floats(&[0.5, -0.25, 1.0, 0.0]);
        let exact = HostData::W4(
            [0.5f64, -0.25, 1.0, 0.0]
                .iter()
                .map(|&x| (x.sin() as f32).to_bits())
                .collect(),
        );
        let o = check_function(ElemType::F32, &xs, ElemType::F32, &exact, MathFn::Sin, 0.5);
        assert!(o.passed && o.max_ulp.unwrap() <= 0.5, "{o:?}");
        // Three ULP off at sin(0.5): allowed with max_ulp 4, not with 2.
        let mut off = exact.clone();
        if let HostData::W4(v) = &mut off {
            v[0] += 3;
        }
        assert!(check_function(ElemType::F32, &xs, ElemType::F32, &off, MathFn::Sin, 4.0).passed);
        let o = check_function(ElemType::F32, &xs, ElemType::F32, &off, MathFn::Sin, 2.0);
        assert!(!o.passed && o.first_mismatch.unwrap().contains("ulp off"));
        // pow with an odd exponent is defined for negative x; log of a negative is NaN on both sides.
        let cubes = HostData::W4(
            [0.125f32, -0.015625, 1.0, 0.0]
                .iter()
                .map(|x| x.to_bits())
                .collect(),
        );
        assert!(
            check_function(
                ElemType::F32,
                &xs,
                ElemType::F32,
                &cubes,
                MathFn::Pow(3.0),
                0.0
            )
            .passed
        );
        let logs = HostData::W4(
            [0.5f64.ln() as f32, f32::NAN, 0.0, f32::NEG_INFINITY]
                .iter()
                .map(|x| x.to_bits())
                .collect(),
        );
        assert!(check_function(ElemType::F32, &xs, ElemType::F32, &logs, MathFn::Log, 1.0).passed);
        // A double output is held to double's ULP: a float-accurate result fails.
        let d = HostData::W8(vec![(0.5f64.sin() as f32 as f64).to_bits()]);
        assert!(
            !check_function(
                ElemType::F64,
                &HostData::W8(vec![0.5f64.to_bits()]),
                ElemType::F64,
                &d,
                MathFn::Sin,
                2.0
            )
            .passed
        );
        // exp(12) is past f16's range: +inf is the right f16 answer, not an infinite error.
        let twelve = HostData::W2(vec![half::f16::from_f32(12.0).to_bits()]);
        let inf = HostData::W2(vec![half::f16::INFINITY.to_bits()]);
        assert!(
            check_function(
                ElemType::F16,
                &twelve,
                ElemType::F16,
                &inf,
                MathFn::Exp,
                0.0
            )
            .passed
        );
        assert_eq!(MathFn::parse("pow", Some(2.5)), Some(MathFn::Pow(2.5)));
        assert_eq!(MathFn::parse("pow", None), None);
    }
}
