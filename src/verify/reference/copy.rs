//! Bit-for-bit checks of data movement: a copy (through offsets and strides) and a transpose.

use super::tally::{Tally, parallel_tally};
use crate::verify::correctness::Correctness;
use crate::verify::data::HostData;
use crate::verify::elem::ElemType;
use crate::verify::shape::CopyMap;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::elem::Init;

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
}
