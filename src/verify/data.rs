//! Host-side buffer contents as raw bit patterns: seeded initialisation and typed reads (pure: no GPU, no disk).

use rand_core::Rng;
use super::{ElemType, Init};

/// A buffer's contents as raw bit patterns, one word per element.
#[derive(Debug, Clone, PartialEq)]
pub enum HostData {
    W4(Vec<u32>),
    W8(Vec<u64>),
}

impl HostData {
    pub fn len(&self) -> usize {
        match self {
            HostData::W4(v) => v.len(),
            HostData::W8(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn zeroed(elem: ElemType, len: usize) -> Self {
        match elem.size() {
            4 => HostData::W4(vec![0; len]),
            _ => HostData::W8(vec![0; len]),
        }
    }

    /// Fills a buffer as its manifest says. Random data is seeded so a failure can be replayed;
    /// it is drawn in fixed chunks, one generator each, so the values do not depend on the thread count.
    pub fn init(elem: ElemType, len: usize, init: Init, seed: u64) -> Self {
        let mut data = HostData::zeroed(elem, len);
        if matches!(init, Init::Random | Init::RandomInt) {
            let whole = init == Init::RandomInt;
            let bits = move |r: u64| if whole { whole_bits(elem, r) } else { random_bits(elem, r) };
            match &mut data {
                HostData::W4(v) => fill_random(v, seed, |r, x: &mut u32, k| *x = bits((r >> (32 * k)) as u32 as u64) as u32, 2),
                HostData::W8(v) => fill_random(v, seed, |r, x: &mut u64, _| *x = bits(r), 1),
            }
            return data;
        }
        match (&mut data, init) {
            (_, Init::Zero) => {}
            (HostData::W4(v), Init::Poison) => v.fill(u32::MAX),
            (HostData::W8(v), Init::Poison) => v.fill(u64::MAX),
            (HostData::W4(v), Init::Iota) => v.iter_mut().enumerate().for_each(|(i, x)| *x = iota_bits(elem, i) as u32),
            (HostData::W8(v), Init::Iota) => v.iter_mut().enumerate().for_each(|(i, x)| *x = iota_bits(elem, i)),
            (_, Init::Random | Init::RandomInt) => unreachable!("handled above"),
        }
        data
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            HostData::W4(v) => cast_bytes(v),
            HostData::W8(v) => cast_bytes(v),
        }
    }

    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            HostData::W4(v) => cast_bytes_mut(v),
            HostData::W8(v) => cast_bytes_mut(v),
        }
    }

    pub(crate) fn word(&self, i: usize) -> u64 {
        match self {
            HostData::W4(v) => v[i] as u64,
            HostData::W8(v) => v[i],
        }
    }
}

pub(crate) const CHUNK: usize = 1 << 20;

pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(32)
}

/// Fills `v` from one PCG stream per CHUNK elements, `per_draw` elements per 64-bit draw.
fn fill_random<T: Send>(v: &mut [T], seed: u64, set: impl Fn(u64, &mut T, usize) + Sync, per_draw: usize) {
    let chunks: Vec<(usize, &mut [T])> = v.chunks_mut(CHUNK).enumerate().collect();
    let per_thread = chunks.len().div_ceil(threads()).max(1);
    let mut chunks = chunks;
    std::thread::scope(|s| {
        while !chunks.is_empty() {
            let mine: Vec<(usize, &mut [T])> = chunks.drain(..per_thread.min(chunks.len())).collect();
            let set = &set;
            s.spawn(move || {
                for (i, chunk) in mine {
                    let mut rng = rand_pcg::Pcg64Mcg::new(((seed as u128) << 64 | i as u128) << 1 | 1);
                    for group in chunk.chunks_mut(per_draw) {
                        let r = rng.next_u64();
                        for (k, x) in group.iter_mut().enumerate() {
                            set(r, x, k);
                        }
                    }
                }
            });
        }
    });
}

fn cast_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: u32/u64 have no padding and every byte pattern is a valid u8.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

fn cast_bytes_mut<T: Copy>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and every byte pattern is a valid u32/u64.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v)) }
}

fn iota_bits(elem: ElemType, i: usize) -> u64 {
    match elem {
        ElemType::F32 => (i as f32).to_bits() as u64,
        ElemType::F64 => (i as f64).to_bits(),
        _ => i as u64,
    }
}

/// Maps raw random bits to a value of the type: floats uniform in [-1, 1), signed integers in [-1000, 1000), unsigned in [0, 2000).
fn random_bits(elem: ElemType, r: u64) -> u64 {
    match elem {
        ElemType::F32 => ((r as u32 >> 8) as f32 / (1u32 << 23) as f32 - 1.0).to_bits() as u64,
        ElemType::F64 => ((r >> 11) as f64 / (1u64 << 52) as f64 - 1.0).to_bits(),
        ElemType::I32 => ((r % 2000) as i32 - 1000) as u32 as u64,
        ElemType::U32 => r % 2000,
        ElemType::I64 => ((r % 2000) as i64 - 1000) as u64,
        ElemType::U64 => r % 2000,
    }
}

/// Whole numbers: integers as `random_bits` draws them, floats holding the same values exactly.
fn whole_bits(elem: ElemType, r: u64) -> u64 {
    let n = (r % 2000) as i64 - 1000;
    match elem {
        ElemType::F32 => (n as f32).to_bits() as u64,
        ElemType::F64 => (n as f64).to_bits(),
        _ => random_bits(elem, r),
    }
}

pub(crate) fn value(elem: ElemType, bits: u64) -> f64 {
    match elem {
        ElemType::F32 => f32::from_bits(bits as u32) as f64,
        ElemType::F64 => f64::from_bits(bits),
        ElemType::I32 => bits as u32 as i32 as f64,
        ElemType::U32 => bits as u32 as f64,
        ElemType::I64 => bits as i64 as f64,
        ElemType::U64 => bits as f64,
    }
}

pub(crate) fn is_poison(elem: ElemType, bits: u64) -> bool {
    bits == if elem.size() == 4 { u32::MAX as u64 } else { u64::MAX }
}

