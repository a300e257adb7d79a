//! Tensor maps (`[[tensor_maps]]`): a buffer's tiled view for TMA as the manifest writes it, the resolved descriptor a job carries, and every rule `cuTensorMapEncodeTiled` documents, checked before the driver sees it (pure).

use serde::{Deserialize, Serialize};

use crate::verify::ElemType;

/// The bytes of a `CUtensorMap`: the kernel takes it by value (`const __grid_constant__ CUtensorMap`).
pub const TENSOR_MAP_BYTES: usize = 128;
/// The largest rank `cuTensorMapEncodeTiled` takes.
pub const MAX_RANK: usize = 5;
/// The largest box edge, in elements.
pub const MAX_BOX: u32 = 256;
/// The largest element stride (traversal step), in elements.
pub const MAX_ELEMENT_STRIDE: u32 = 8;
/// Global strides must stay below 2^40 bytes.
pub const MAX_GLOBAL_STRIDE: u64 = 1 << 40;
/// Global dimensions may be at most 2^32 elements.
pub const MAX_GLOBAL_DIM: u64 = 1 << 32;

/// `[[tensor_maps]]`: a tiled view of one buffer, passed to a kernel by naming it in `args`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorMapDecl {
    pub name: String,
    /// The buffer it views; the element type is the buffer's.
    pub buffer: String,
    /// Elements of each dimension, innermost first (1 to 5 expressions).
    pub dims: Vec<String>,
    /// Bytes between consecutive entries of each outer dimension (rank-1 expressions); packed by default.
    pub strides: Option<Vec<String>>,
    /// The box (tile) one TMA copy moves, in elements, innermost first (each 1 to 256).
    #[serde(rename = "box")]
    pub box_dims: Vec<String>,
    /// The traversal step in each dimension (1 to 8; all 1 by default).
    pub element_strides: Option<Vec<String>>,
    #[serde(default)]
    pub swizzle: Swizzle,
    #[serde(default)]
    pub interleave: Interleave,
    #[serde(default)]
    pub l2_promotion: L2Promotion,
    #[serde(default)]
    pub oob_fill: OobFill,
}

/// How the box is laid out in shared memory (`CUtensorMapSwizzle`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum Swizzle {
    #[default]
    #[serde(rename = "none")]
    None,
    #[serde(rename = "32B", alias = "32b")]
    B32,
    #[serde(rename = "64B", alias = "64b")]
    B64,
    #[serde(rename = "128B", alias = "128b")]
    B128,
}

/// How the tensor is interleaved in global memory (`CUtensorMapInterleave`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum Interleave {
    #[default]
    #[serde(rename = "none")]
    None,
    #[serde(rename = "16B", alias = "16b")]
    B16,
    #[serde(rename = "32B", alias = "32b")]
    B32,
}

/// How far L2 fetches are widened (`CUtensorMapL2promotion`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum L2Promotion {
    #[default]
    #[serde(rename = "none")]
    None,
    #[serde(rename = "64B", alias = "64b")]
    B64,
    #[serde(rename = "128B", alias = "128b")]
    B128,
    #[serde(rename = "256B", alias = "256b")]
    B256,
}

/// What a box reads outside the tensor (`CUtensorMapFloatOOBfill`): zeros, or NaN (floats only).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OobFill {
    #[default]
    Zero,
    Nan,
}

/// The element type as TMA knows it (`CUtensorMapDataType`, same numbers).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TensorDataType {
    Uint8,
    Uint16,
    Uint32,
    Int32,
    Uint64,
    Int64,
    Float16,
    Float32,
    Float64,
    Bfloat16,
}

impl TensorDataType {
    /// The TMA type that carries a buffer of `elem`: TMA copies bits, so 8- and 16-bit integers
    /// and the FP8 types travel as unsigned integers of their size.
    pub fn for_elem(elem: ElemType) -> TensorDataType {
        match elem {
            ElemType::F16 => TensorDataType::Float16,
            ElemType::Bf16 => TensorDataType::Bfloat16,
            ElemType::F32 => TensorDataType::Float32,
            ElemType::F64 => TensorDataType::Float64,
            ElemType::E4m3 | ElemType::E5m2 | ElemType::I8 | ElemType::U8 => TensorDataType::Uint8,
            ElemType::I16 | ElemType::U16 => TensorDataType::Uint16,
            ElemType::I32 => TensorDataType::Int32,
            ElemType::U32 => TensorDataType::Uint32,
            ElemType::I64 => TensorDataType::Int64,
            ElemType::U64 => TensorDataType::Uint64,
        }
    }

    /// The `CUtensorMapDataType` value.
    pub fn code(self) -> u32 {
        self as u32
    }

    pub fn bytes(self) -> u64 {
        match self {
            TensorDataType::Uint8 => 1,
            TensorDataType::Uint16 | TensorDataType::Float16 | TensorDataType::Bfloat16 => 2,
            TensorDataType::Uint32 | TensorDataType::Int32 | TensorDataType::Float32 => 4,
            TensorDataType::Uint64 | TensorDataType::Int64 | TensorDataType::Float64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            TensorDataType::Float16
                | TensorDataType::Float32
                | TensorDataType::Float64
                | TensorDataType::Bfloat16
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            TensorDataType::Uint8 => "UINT8",
            TensorDataType::Uint16 => "UINT16",
            TensorDataType::Uint32 => "UINT32",
            TensorDataType::Int32 => "INT32",
            TensorDataType::Uint64 => "UINT64",
            TensorDataType::Int64 => "INT64",
            TensorDataType::Float16 => "FLOAT16",
            TensorDataType::Float32 => "FLOAT32",
            TensorDataType::Float64 => "FLOAT64",
            TensorDataType::Bfloat16 => "BFLOAT16",
        }
    }
}

impl Swizzle {
    /// The name a manifest writes.
    pub fn name(self) -> &'static str {
        match self {
            Swizzle::None => "none",
            Swizzle::B32 => "32B",
            Swizzle::B64 => "64B",
            Swizzle::B128 => "128B",
        }
    }

    /// The `CUtensorMapSwizzle` value.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The bytes of the swizzle pattern's row (None: no swizzle).
    pub fn span(self) -> Option<u64> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
        }
    }
}

impl Interleave {
    /// The `CUtensorMapInterleave` value.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The alignment in bytes it asks of the address and strides.
    pub fn alignment(self) -> u64 {
        match self {
            Interleave::B32 => 32,
            Interleave::None | Interleave::B16 => 16,
        }
    }
}

impl L2Promotion {
    /// The `CUtensorMapL2promotion` value.
    pub fn code(self) -> u32 {
        self as u32
    }
}

impl OobFill {
    /// The `CUtensorMapFloatOOBfill` value.
    pub fn code(self) -> u32 {
        match self {
            OobFill::Zero => 0,
            OobFill::Nan => 1,
        }
    }
}

/// A tensor map resolved at a job's sizes: what `cuTensorMapEncodeTiled` is called with, less the
/// buffer's address (the runner's allocation).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TensorMapSpec {
    /// Its place in the manifest's `[[tensor_maps]]` (an argument `ArgSpec::TensorMap` names it by this).
    pub index: usize,
    pub name: String,
    /// The job's buffer it views.
    pub buffer: usize,
    pub data_type: TensorDataType,
    /// Elements per dimension, innermost first.
    pub dims: Vec<u64>,
    /// Bytes between entries of dimensions 1.., (rank-1 entries).
    pub strides: Vec<u64>,
    pub box_dims: Vec<u32>,
    pub element_strides: Vec<u32>,
    #[serde(default)]
    pub swizzle: Swizzle,
    #[serde(default)]
    pub interleave: Interleave,
    #[serde(default)]
    pub l2_promotion: L2Promotion,
    #[serde(default)]
    pub oob_fill: OobFill,
}

/// A rule broken: what is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    /// The manifest key it is about (`dims`, `strides`, `box`, ...).
    pub key: &'static str,
    pub message: String,
    pub fix: String,
}

fn broken(key: &'static str, message: String, fix: impl Into<String>) -> Broken {
    Broken {
        key,
        message,
        fix: fix.into(),
    }
}

/// The strides of a packed tensor: each outer dimension's entries follow each other with no gap.
pub fn packed_strides(dims: &[u64], elem_bytes: u64) -> Vec<u64> {
    let mut strides = Vec::new();
    let mut bytes = elem_bytes;
    for d in dims.iter().take(dims.len().saturating_sub(1)) {
        bytes = bytes.saturating_mul(*d);
        strides.push(bytes);
    }
    strides
}

impl TensorMapSpec {
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Bytes from the first element to one past the last one the view can reach.
    pub fn extent_bytes(&self) -> u64 {
        let elem = self.data_type.bytes();
        let inner = self.dims[0].saturating_mul(elem);
        self.dims
            .iter()
            .skip(1)
            .zip(&self.strides)
            .fold(inner, |acc, (d, s)| {
                acc.saturating_add(d.saturating_sub(1).saturating_mul(*s))
            })
    }

    /// The bytes of one box in shared memory.
    pub fn box_bytes(&self) -> u64 {
        self.box_dims.iter().map(|&b| b as u64).product::<u64>() * self.data_type.bytes()
    }

    /// Every rule `cuTensorMapEncodeTiled` documents that is known before the address, and that
    /// the view stays inside its buffer (`buffer_bytes`).
    pub fn check(&self, buffer_bytes: u64) -> Result<(), Broken> {
        self.check_shape()?;
        self.check_strides()?;
        self.check_box()?;
        self.check_modes()?;
        let extent = self.extent_bytes();
        if extent > buffer_bytes {
            return Err(broken(
                "dims",
                format!(
                    "tensor map `{}` reaches {extent} bytes into its buffer, which has {buffer_bytes}",
                    self.name
                ),
                "make dims and strides describe the buffer (dims innermost first, strides in bytes), or make the buffer longer",
            ));
        }
        Ok(())
    }

    fn check_shape(&self) -> Result<(), Broken> {
        let name = &self.name;
        let rank = self.rank();
        if rank == 0 || rank > MAX_RANK {
            return Err(broken(
                "dims",
                format!(
                    "tensor map `{name}` has rank {rank}; TMA takes 1 to {MAX_RANK} dimensions"
                ),
                "give 1 to 5 dims, innermost first",
            ));
        }
        if let Some((i, d)) = self
            .dims
            .iter()
            .enumerate()
            .find(|(_, d)| **d == 0 || **d > MAX_GLOBAL_DIM)
        {
            return Err(broken(
                "dims",
                format!("tensor map `{name}`: dims[{i}] = {d}, outside 1 to 2^32"),
                "check the dims expressions against the sweep",
            ));
        }
        let lists = [
            ("box", self.box_dims.len(), "one box edge per dimension"),
            (
                "element_strides",
                self.element_strides.len(),
                "one element stride per dimension (or leave element_strides out: all 1)",
            ),
        ];
        for (key, n, fix) in lists {
            if n != rank {
                return Err(broken(
                    key,
                    format!("tensor map `{name}` has {rank} dims and {n} {key} entries"),
                    fix,
                ));
            }
        }
        if self.strides.len() != rank - 1 {
            return Err(broken(
                "strides",
                format!(
                    "tensor map `{name}` has {rank} dims and {} strides; strides are given for the outer dimensions only ({} entries)",
                    self.strides.len(),
                    rank - 1
                ),
                "give the byte stride of dims[1..] (the innermost dimension is contiguous), or leave strides out for a packed tensor",
            ));
        }
        Ok(())
    }

    fn check_strides(&self) -> Result<(), Broken> {
        let name = &self.name;
        let align = self.interleave.alignment();
        let mut reach = self.dims[0] * self.data_type.bytes();
        for (i, &s) in self.strides.iter().enumerate() {
            if !s.is_multiple_of(align) || s >= MAX_GLOBAL_STRIDE {
                let padded = reach.div_ceil(align) * align;
                return Err(broken(
                    "strides",
                    format!(
                        "tensor map `{name}`: the stride of dims[{}] is {s} bytes; TMA needs a multiple of {align} bytes below 2^40",
                        i + 1
                    ),
                    format!(
                        "pad each row to a multiple of {align} bytes (for example strides[{i}] = {padded}, with a buffer long enough for the padding), or choose dims whose rows are a multiple of {align} bytes"
                    ),
                ));
            }
            if s < reach {
                return Err(broken(
                    "strides",
                    format!(
                        "tensor map `{name}`: the stride of dims[{}] is {s} bytes, less than the {reach} bytes one entry of it spans: entries would overlap",
                        i + 1
                    ),
                    "give strides in bytes, each at least the previous dimension's extent (dims[i] elements × the stride below it)",
                ));
            }
            reach = s.saturating_mul(self.dims[i + 1]);
        }
        Ok(())
    }

    fn check_box(&self) -> Result<(), Broken> {
        let name = &self.name;
        if let Some((i, b)) = self
            .box_dims
            .iter()
            .enumerate()
            .find(|(_, b)| **b == 0 || **b > MAX_BOX)
        {
            return Err(broken(
                "box",
                format!("tensor map `{name}`: box[{i}] = {b}, outside 1 to {MAX_BOX}"),
                "give each box edge 1 to 256 elements (copy larger tiles in several boxes)",
            ));
        }
        if let Some((i, e)) = self
            .element_strides
            .iter()
            .enumerate()
            .find(|(_, e)| **e == 0 || **e > MAX_ELEMENT_STRIDE)
        {
            return Err(broken(
                "element_strides",
                format!(
                    "tensor map `{name}`: element_strides[{i}] = {e}, outside 1 to {MAX_ELEMENT_STRIDE}"
                ),
                "give element strides of 1 to 8 (1 reads every element)",
            ));
        }
        let inner_bytes = self.box_dims[0] as u64 * self.data_type.bytes();
        if self.interleave == Interleave::None {
            if !inner_bytes.is_multiple_of(16) {
                return Err(broken(
                    "box",
                    format!(
                        "tensor map `{name}`: the box's inner edge is {} elements of {} bytes = {inner_bytes} bytes; TMA needs a multiple of 16 bytes",
                        self.box_dims[0],
                        self.data_type.bytes()
                    ),
                    format!(
                        "make box[0] a multiple of {} elements",
                        16 / self.data_type.bytes()
                    ),
                ));
            }
            if let Some(span) = self.swizzle.span().filter(|&s| inner_bytes > s) {
                return Err(broken(
                    "box",
                    format!(
                        "tensor map `{name}`: the box's inner edge is {inner_bytes} bytes, more than the {span}-byte span of swizzle {}",
                        self.swizzle.name()
                    ),
                    format!(
                        "make box[0] at most {} elements, or choose a wider swizzle (128B spans 128 bytes)",
                        span / self.data_type.bytes()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_modes(&self) -> Result<(), Broken> {
        let name = &self.name;
        if self.interleave != Interleave::None && self.rank() < 3 {
            return Err(broken(
                "interleave",
                format!(
                    "tensor map `{name}` is interleaved and has rank {}; interleaved layouts need rank 3 or more",
                    self.rank()
                ),
                "use interleave = \"none\", or describe the interleaved layout with 3 or more dims",
            ));
        }
        if self.interleave == Interleave::B32 && self.swizzle != Swizzle::B32 {
            return Err(broken(
                "swizzle",
                format!(
                    "tensor map `{name}` has interleave 32B and swizzle {}; the driver requires swizzle 32B with it",
                    self.swizzle.name()
                ),
                "set swizzle = \"32B\"",
            ));
        }
        if self.oob_fill == OobFill::Nan && !self.data_type.is_float() {
            return Err(broken(
                "oob_fill",
                format!(
                    "tensor map `{name}` fills out-of-bounds reads with NaN, and its elements travel as {} (no NaN)",
                    self.data_type.name()
                ),
                "use oob_fill = \"zero\" (NaN fill is for f16, bf16, f32 and f64 buffers; fp8 buffers travel as UINT8)",
            ));
        }
        Ok(())
    }

    /// One line for errors and logs: `tmap_a: FLOAT32 dims [1024, 512] strides [4096] box [32, 32] swizzle none`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {} dims {:?} strides {:?} box {:?} element_strides {:?} interleave {:?} swizzle {:?} l2_promotion {:?} oob_fill {:?}",
            self.name,
            self.data_type.name(),
            self.dims,
            self.strides,
            self.box_dims,
            self.element_strides,
            self.interleave,
            self.swizzle,
            self.l2_promotion,
            self.oob_fill
        )
    }
}

#[cfg(test)]
#[path = "tensor_map_tests.rs"]
mod tests;
