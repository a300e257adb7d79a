//! CUPTI's Profiler Host API and Range Profiler, by hand: the parameter structs as `cupti_profiler_host.h`, `cupti_range_profiler.h` and `cupti_target.h` (CUDA 13) lay them out, and the entry points loaded from libcupti at run time.
//!
//! Every parameter struct begins with `structSize` and `pPriv`; CUPTI reads `structSize` to know
//! which version of the struct the caller was built against, and the headers define it as the end
//! of the struct's last field (`CUPTI_PROFILER_STRUCT_SIZE(type, lastField)`), not `sizeof`, so
//! [`struct_size!`] computes it the same way.

#![allow(non_snake_case, non_camel_case_types)]

use std::ffi::{c_char, c_void};

use cudarc::driver::sys::CUcontext;

pub type CUptiResult = u32;
pub const CUPTI_SUCCESS: CUptiResult = 0;

/// `CUpti_ProfilerType`.
pub const CUPTI_PROFILER_TYPE_RANGE_PROFILER: u32 = 0;
/// `CUpti_ProfilerRange`.
pub const CUPTI_AUTO_RANGE: u32 = 1;
/// `CUpti_ProfilerReplayMode`.
pub const CUPTI_USER_REPLAY: u32 = 3;

/// Opaque objects CUPTI hands out.
pub enum HostObject {}
pub enum RangeProfilerObject {}

/// `offsetof(T, last) + sizeof(last)`, as the headers' `CUPTI_PROFILER_STRUCT_SIZE`.
macro_rules! struct_size {
    ($t:ty, $last:ident) => {{
        let probe = std::mem::MaybeUninit::<$t>::uninit();
        // SAFETY: only the field's address is taken, never read.
        let field_size = unsafe { std::mem::size_of_val(&(*probe.as_ptr()).$last) };
        std::mem::offset_of!($t, $last) + field_size
    }};
}

/// A parameter struct with every field zero and `structSize` set.
pub trait Params: Sized {
    const SIZE_FN: fn() -> usize;
    fn new() -> Self {
        // SAFETY: every field of these repr(C) structs is an integer or a raw pointer, for which
        // all-zero bytes are valid (null pointers, zero counts).
        let mut p: Self = unsafe { std::mem::zeroed() };
        // SAFETY: every implementor is repr(C) with `structSize: usize` as its first field.
        unsafe { *(&mut p as *mut Self as *mut usize) = Self::SIZE_FN() };
        p
    }
}

macro_rules! params {
    ($name:ident, $last:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        #[repr(C)]
        pub struct $name {
            pub structSize: usize,
            pub pPriv: *mut c_void,
            $(pub $field: $ty),*
        }
        impl Params for $name {
            const SIZE_FN: fn() -> usize = || struct_size!($name, $last);
        }
    };
}

params!(ProfilerInitialize, pPriv {});
/// `CUpti_Profiler_DeInitialize_Params` has the same two fields.
pub type ProfilerDeInitialize = ProfilerInitialize;
params!(DeviceGetChipName, pChipName {
    deviceIndex: usize,
    pChipName: *const c_char,
});
params!(GetCounterAvailability, pCounterAvailabilityImage {
    ctx: CUcontext,
    counterAvailabilityImageSize: usize,
    pCounterAvailabilityImage: *mut u8,
});
params!(HostInitialize, pHostObject {
    profilerType: u32,
    pChipName: *const c_char,
    pCounterAvailabilityImage: *const u8,
    pHostObject: *mut HostObject,
});
params!(HostDeinitialize, pHostObject {
    pHostObject: *mut HostObject,
});
params!(HostConfigAddMetrics, numMetrics {
    pHostObject: *mut HostObject,
    ppMetricNames: *mut *const c_char,
    numMetrics: usize,
});
params!(HostGetConfigImageSize, configImageSize {
    pHostObject: *mut HostObject,
    configImageSize: usize,
});
params!(HostGetConfigImage, pConfigImage {
    pHostObject: *mut HostObject,
    configImageSize: usize,
    pConfigImage: *mut u8,
});
params!(HostGetNumOfPasses, numOfPasses {
    configImageSize: usize,
    pConfigImage: *mut u8,
    numOfPasses: usize,
});
params!(HostEvaluateToGpuValues, pMetricValues {
    pHostObject: *mut HostObject,
    pCounterDataImage: *const u8,
    counterDataImageSize: usize,
    rangeIndex: usize,
    ppMetricNames: *mut *const c_char,
    numMetrics: usize,
    pMetricValues: *mut f64,
});
params!(RangeEnable, pRangeProfilerObject {
    ctx: CUcontext,
    pRangeProfilerObject: *mut RangeProfilerObject,
});
params!(RangeDisable, pRangeProfilerObject {
    pRangeProfilerObject: *mut RangeProfilerObject,
});
params!(RangeStart, pRangeProfilerObject {
    pRangeProfilerObject: *mut RangeProfilerObject,
});
params!(RangeStop, isAllPassSubmitted {
    pRangeProfilerObject: *mut RangeProfilerObject,
    passIndex: usize,
    targetNestingLevel: usize,
    isAllPassSubmitted: u8,
});
params!(RangeSetConfig, targetNestingLevel {
    pRangeProfilerObject: *mut RangeProfilerObject,
    configSize: usize,
    pConfig: *const u8,
    counterDataImageSize: usize,
    pCounterDataImage: *mut u8,
    range: u32,
    replayMode: u32,
    maxRangesPerPass: usize,
    numNestingLevels: u16,
    minNestingLevel: u16,
    passIndex: usize,
    targetNestingLevel: u16,
});
params!(RangeGetCounterDataSize, counterDataSize {
    pRangeProfilerObject: *mut RangeProfilerObject,
    pMetricNames: *mut *const c_char,
    numMetrics: usize,
    maxNumOfRanges: usize,
    maxNumRangeTreeNodes: u32,
    counterDataSize: usize,
});
params!(RangeCounterDataImageInitialize, pCounterData {
    pRangeProfilerObject: *mut RangeProfilerObject,
    counterDataSize: usize,
    pCounterData: *mut u8,
});
params!(RangeDecodeData, numOfRangeDropped {
    pRangeProfilerObject: *mut RangeProfilerObject,
    numOfRangeDropped: usize,
});
params!(RangeGetCounterDataInfo, numTotalRanges {
    pCounterDataImage: *const u8,
    counterDataImageSize: usize,
    numTotalRanges: usize,
});
params!(RangeGetRangeInfo, rangeName {
    pCounterDataImage: *const u8,
    counterDataImageSize: usize,
    rangeIndex: usize,
    rangeDelimiter: *const c_char,
    rangeName: *const c_char,
});

/// One entry point: `CUptiResult f(Params*)`.
pub type Entry<P> = unsafe extern "C" fn(*mut P) -> CUptiResult;

/// The entry points gpu-lab calls, resolved once from the loaded library.
pub struct Api {
    pub get_result_string: unsafe extern "C" fn(CUptiResult, *mut *const c_char) -> CUptiResult,
    pub profiler_initialize: Entry<ProfilerInitialize>,
    pub device_get_chip_name: Entry<DeviceGetChipName>,
    pub get_counter_availability: Entry<GetCounterAvailability>,
    pub host_initialize: Entry<HostInitialize>,
    pub host_deinitialize: Entry<HostDeinitialize>,
    pub host_config_add_metrics: Entry<HostConfigAddMetrics>,
    pub host_get_config_image_size: Entry<HostGetConfigImageSize>,
    pub host_get_config_image: Entry<HostGetConfigImage>,
    pub host_get_num_of_passes: Entry<HostGetNumOfPasses>,
    pub host_evaluate_to_gpu_values: Entry<HostEvaluateToGpuValues>,
    pub range_enable: Entry<RangeEnable>,
    pub range_disable: Entry<RangeDisable>,
    pub range_start: Entry<RangeStart>,
    pub range_stop: Entry<RangeStop>,
    pub range_set_config: Entry<RangeSetConfig>,
    pub range_get_counter_data_size: Entry<RangeGetCounterDataSize>,
    pub range_counter_data_image_initialize: Entry<RangeCounterDataImageInitialize>,
    pub range_decode_data: Entry<RangeDecodeData>,
    pub range_get_counter_data_info: Entry<RangeGetCounterDataInfo>,
    pub range_get_range_info: Entry<RangeGetRangeInfo>,
    pub profiler_deinitialize: Entry<ProfilerDeInitialize>,
}

impl Api {
    /// Resolves every entry point of `lib`; the first one missing is named in the error.
    ///
    /// # Safety
    /// `lib` must be a libcupti whose symbols have the signatures the headers give them.
    pub unsafe fn resolve(lib: libloading::Library) -> Result<Api, String> {
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the caller vouches for the library; the type is the header's.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("libcupti has no `{}`: {e}", $name))?
            };
        }
        Ok(Api {
            get_result_string: sym!("cuptiGetResultString"),
            profiler_initialize: sym!("cuptiProfilerInitialize"),
            device_get_chip_name: sym!("cuptiDeviceGetChipName"),
            get_counter_availability: sym!("cuptiProfilerGetCounterAvailability"),
            host_initialize: sym!("cuptiProfilerHostInitialize"),
            host_deinitialize: sym!("cuptiProfilerHostDeinitialize"),
            host_config_add_metrics: sym!("cuptiProfilerHostConfigAddMetrics"),
            host_get_config_image_size: sym!("cuptiProfilerHostGetConfigImageSize"),
            host_get_config_image: sym!("cuptiProfilerHostGetConfigImage"),
            host_get_num_of_passes: sym!("cuptiProfilerHostGetNumOfPasses"),
            host_evaluate_to_gpu_values: sym!("cuptiProfilerHostEvaluateToGpuValues"),
            range_enable: sym!("cuptiRangeProfilerEnable"),
            range_disable: sym!("cuptiRangeProfilerDisable"),
            range_start: sym!("cuptiRangeProfilerStart"),
            range_stop: sym!("cuptiRangeProfilerStop"),
            range_set_config: sym!("cuptiRangeProfilerSetConfig"),
            range_get_counter_data_size: sym!("cuptiRangeProfilerGetCounterDataSize"),
            range_counter_data_image_initialize: sym!(
                "cuptiRangeProfilerCounterDataImageInitialize"
            ),
            range_decode_data: sym!("cuptiRangeProfilerDecodeData"),
            range_get_counter_data_info: sym!("cuptiRangeProfilerGetCounterDataInfo"),
            range_get_range_info: sym!("cuptiRangeProfilerCounterDataGetRangeInfo"),
            profiler_deinitialize: sym!("cuptiProfilerDeInitialize"),
        })
        .inspect(|_| {
            // Never unloaded: CUPTI keeps threads and exit handlers inside the library, and a
            // dlclose before the process ends took the child down with SIGSEGV at exit (H200,
            // 2026-11-25), after its results were written.
            std::mem::forget(lib);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `*_STRUCT_SIZE` of CUPTI 13's headers on x86-64, as a C++ program compiled against
    /// the headers copied off the H200 (CUDA 13.0, 2026-11-25) printed them: a wrong one is
    /// refused by CUPTI as CUPTI_ERROR_INVALID_PARAMETER, or worse, read past.
    #[test]
    fn struct_sizes_match_the_headers() {
        let sizes = [
            (ProfilerInitialize::SIZE_FN(), 16),
            (DeviceGetChipName::SIZE_FN(), 32),
            (GetCounterAvailability::SIZE_FN(), 40),
            (HostInitialize::SIZE_FN(), 48),
            (HostDeinitialize::SIZE_FN(), 24),
            (HostConfigAddMetrics::SIZE_FN(), 40),
            (HostGetConfigImageSize::SIZE_FN(), 32),
            (HostGetConfigImage::SIZE_FN(), 40),
            (HostGetNumOfPasses::SIZE_FN(), 40),
            (HostEvaluateToGpuValues::SIZE_FN(), 72),
            (RangeEnable::SIZE_FN(), 32),
            (RangeDisable::SIZE_FN(), 24),
            (RangeStart::SIZE_FN(), 24),
            (RangeStop::SIZE_FN(), 41),
            (RangeSetConfig::SIZE_FN(), 90),
            (RangeGetCounterDataSize::SIZE_FN(), 64),
            (RangeCounterDataImageInitialize::SIZE_FN(), 40),
            (RangeDecodeData::SIZE_FN(), 32),
            (RangeGetCounterDataInfo::SIZE_FN(), 40),
            (RangeGetRangeInfo::SIZE_FN(), 56),
            (ProfilerDeInitialize::SIZE_FN(), 16),
        ];
        for (i, (ours, headers)) in sizes.iter().enumerate() {
            assert_eq!(ours, headers, "struct {i} of the list");
        }
    }

    #[test]
    fn new_params_carry_their_size_and_nothing_else() {
        let p = RangeSetConfig::new();
        assert_eq!(p.structSize, 90);
        assert!(p.pRangeProfilerObject.is_null());
        assert_eq!(p.maxRangesPerPass, 0);
    }
}
