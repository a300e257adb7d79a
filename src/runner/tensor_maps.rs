//! A job's tensor maps encoded for its allocations (`cuTensorMapEncodeTiled`): the 128 bytes each kernel argument naming one passes by value.

use cudarc::driver::sys;

use super::error::RunError;
use crate::suite::tensor_map::{
    Interleave, L2Promotion, OobFill, Swizzle, TENSOR_MAP_BYTES, TensorDataType, TensorMapSpec,
};

/// One encoded `CUtensorMap`, aligned as the driver asks (64 bytes; 128 in CUDA 13's header).
#[derive(Clone, Copy)]
#[repr(C, align(128))]
pub(super) struct EncodedMap(pub(super) [u8; TENSOR_MAP_BYTES]);

/// Encodes `spec` for the buffer at device address `address`.
pub(super) fn encode(spec: &TensorMapSpec, address: u64) -> Result<EncodedMap, RunError> {
    let align = spec.interleave.alignment();
    if !address.is_multiple_of(align) {
        return Err(RunError::Invalid(format!(
            "tensor map `{}`: its buffer's address {address:#x} is not {align}-byte aligned, as TMA requires\n  fix: view a buffer of its own (allocations are 256-byte aligned)",
            spec.name
        )));
    }
    let mut map = sys::CUtensorMap {
        opaque: [0; TENSOR_MAP_BYTES / 8],
    };
    let (data_type, interleave, swizzle, l2, oob) = driver_enums(spec);
    // SAFETY: `map` is a live, suitably aligned CUtensorMap; the arrays hold `rank` entries
    // (`rank - 1` strides), as the pure check made sure; the address is the job's allocation.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            data_type,
            spec.rank() as u32,
            address as *mut std::ffi::c_void,
            spec.dims.as_ptr(),
            spec.strides.as_ptr(),
            spec.box_dims.as_ptr(),
            spec.element_strides.as_ptr(),
            interleave,
            swizzle,
            l2,
            oob,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(RunError::Invalid(format!(
            "cuTensorMapEncodeTiled refused tensor map {} with {r:?}\n  fix: the descriptor passed gpu-lab's checks of the documented rules; check the GPU supports TMA (compute capability 9.0 or later) and the driver's release notes for further limits",
            spec.describe()
        )));
    }
    let mut bytes = [0u8; TENSOR_MAP_BYTES];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(map.opaque) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    Ok(EncodedMap(bytes))
}

/// Every tensor map of a job, by its manifest index, encoded at its buffer's address (`base`: each buffer's device address).
pub(super) fn encode_all(
    maps: &[TensorMapSpec],
    base: &[u64],
) -> Result<Vec<(usize, EncodedMap)>, RunError> {
    maps.iter()
        .map(|t| Ok((t.index, encode(t, base[t.buffer])?)))
        .collect()
}

/// The descriptor's modes as the driver's enums.
fn driver_enums(
    spec: &TensorMapSpec,
) -> (
    sys::CUtensorMapDataType,
    sys::CUtensorMapInterleave,
    sys::CUtensorMapSwizzle,
    sys::CUtensorMapL2promotion,
    sys::CUtensorMapFloatOOBfill,
) {
    use sys::CUtensorMapDataType as D;
    let data_type = match spec.data_type {
        TensorDataType::Uint8 => D::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        TensorDataType::Uint16 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        TensorDataType::Uint32 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        TensorDataType::Int32 => D::CU_TENSOR_MAP_DATA_TYPE_INT32,
        TensorDataType::Uint64 => D::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        TensorDataType::Int64 => D::CU_TENSOR_MAP_DATA_TYPE_INT64,
        TensorDataType::Float16 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        TensorDataType::Float32 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        TensorDataType::Float64 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        TensorDataType::Bfloat16 => D::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    };
    let interleave = match spec.interleave {
        Interleave::None => sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
        Interleave::B16 => sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_16B,
        Interleave::B32 => sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_32B,
    };
    let swizzle = match spec.swizzle {
        Swizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        Swizzle::B32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        Swizzle::B64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        Swizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    use sys::CUtensorMapL2promotion as L;
    let l2 = match spec.l2_promotion {
        L2Promotion::None => L::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        L2Promotion::B64 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        L2Promotion::B128 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        L2Promotion::B256 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    };
    use sys::CUtensorMapFloatOOBfill as O;
    let oob = match spec.oob_fill {
        OobFill::Zero => O::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        OobFill::Nan => O::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
    };
    (data_type, interleave, swizzle, l2, oob)
}
