//! One collection of counters on one context: the host object and configuration image made once, then for each workload a counter data image, the passes the caller replays (user replay, one auto range a kernel), the decode and the evaluation of every range.

use std::ffi::{CStr, CString, c_char};
use std::time::Instant;

use cudarc::driver::sys::CUcontext;
use serde::{Deserialize, Serialize};

use super::error::CuptiError;
use super::ffi::{self, Api, Params};

/// The counters of one collection, as C strings CUPTI can read (kept alive with their pointers).
pub struct Counters {
    names: Vec<String>,
    owned: Vec<CString>,
    pointers: Vec<*const c_char>,
}

impl Counters {
    pub fn new(names: &[String]) -> Result<Counters, CuptiError> {
        let owned = names
            .iter()
            .map(|n| {
                CString::new(n.as_str())
                    .map_err(|_| CuptiError::Invalid(format!("counter name {n:?} holds a NUL")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let pointers = owned.iter().map(|c| c.as_ptr()).collect();
        Ok(Counters {
            names: names.to_vec(),
            owned,
            pointers,
        })
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    fn ptr(&mut self) -> *mut *const c_char {
        debug_assert_eq!(self.owned.len(), self.pointers.len());
        self.pointers.as_mut_ptr()
    }
}

/// One range's values: its name (the kernel's, for an auto range) and one value per counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeValues {
    pub name: String,
    pub values: Vec<f64>,
}

/// What one workload gave: its ranges in launch order, the passes it took, and the seconds spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collection {
    pub ranges: Vec<RangeValues>,
    pub passes: usize,
    pub dropped_ranges: usize,
    pub seconds: f64,
    /// Where the seconds went (absent from collections made before it was recorded).
    #[serde(default)]
    pub phases: Phases,
}

/// Where one job's collection spent its time, phase by phase (issue 31: what a profile costs
/// beyond a run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// Enabling the range profiler (0 where the job before left it enabled).
    pub enable_s: f64,
    /// The counter data image sized and initialised, and the configuration set.
    pub configure_s: f64,
    /// Putting the inputs back and flushing the L2 before each pass, outside the ranges.
    pub prepare_s: f64,
    /// The passes: Start, the job's launches, Stop.
    pub passes_s: f64,
    pub decode_s: f64,
    pub evaluate_s: f64,
    /// Disabling the range profiler (0 where it stays enabled for the next job).
    pub disable_s: f64,
    /// The `maxRangesPerPass` the collection ran with (every range of the pass).
    pub ranges_per_pass: usize,
    /// How many jobs shared the passes (their kernels in one pass, see `runner::cupti_pass`);
    /// 0 in collections made before batching.
    #[serde(default)]
    pub jobs_in_pass: usize,
}

/// The host side of a collection: chip, host object and configuration image for `counters`.
pub struct Session<'a> {
    api: &'a Api,
    ctx: CUcontext,
    host: *mut ffi::HostObject,
    config: Vec<u8>,
    counters: Counters,
    /// Passes the configuration needs, as the host API counts them.
    pub passes: usize,
    pub chip: String,
}

impl<'a> Session<'a> {
    /// Sets up the collection of `counters` on `ctx` (current on this thread) of device `device`.
    /// A counter this chip does not have is an error naming CUPTI's reason.
    pub fn open(
        api: &'a Api,
        ctx: CUcontext,
        device: usize,
        counters: Counters,
    ) -> Result<Session<'a>, CuptiError> {
        let mut init = ffi::ProfilerInitialize::new();
        // SAFETY: a zeroed, sized parameter struct (as every call below).
        api.check("cuptiProfilerInitialize", unsafe {
            (api.profiler_initialize)(&mut init)
        })?;
        let mut chip = ffi::DeviceGetChipName::new();
        chip.deviceIndex = device;
        api.check("cuptiDeviceGetChipName", unsafe {
            (api.device_get_chip_name)(&mut chip)
        })?;
        // SAFETY: CUPTI returns a static NUL-terminated name.
        let chip_name = unsafe { CStr::from_ptr(chip.pChipName) }.to_owned();
        let availability = counter_availability(api, ctx)?;
        let mut host = ffi::HostInitialize::new();
        host.profilerType = ffi::CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        host.pChipName = chip_name.as_ptr();
        host.pCounterAvailabilityImage = availability.as_ptr();
        api.check("cuptiProfilerHostInitialize", unsafe {
            (api.host_initialize)(&mut host)
        })?;
        let mut session = Session {
            api,
            ctx,
            host: host.pHostObject,
            config: Vec::new(),
            counters,
            passes: 0,
            chip: chip_name.to_string_lossy().into_owned(),
        };
        session.configure()?;
        Ok(session)
    }

    fn configure(&mut self) -> Result<(), CuptiError> {
        let api = self.api;
        let mut add = ffi::HostConfigAddMetrics::new();
        add.pHostObject = self.host;
        add.ppMetricNames = self.counters.ptr();
        add.numMetrics = self.counters.names().len();
        api.check("cuptiProfilerHostConfigAddMetrics", unsafe {
            (api.host_config_add_metrics)(&mut add)
        })
        .map_err(|e| self.name_counters(e))?;
        let mut size = ffi::HostGetConfigImageSize::new();
        size.pHostObject = self.host;
        api.check("cuptiProfilerHostGetConfigImageSize", unsafe {
            (api.host_get_config_image_size)(&mut size)
        })?;
        self.config = vec![0u8; size.configImageSize];
        let mut image = ffi::HostGetConfigImage::new();
        image.pHostObject = self.host;
        image.configImageSize = self.config.len();
        image.pConfigImage = self.config.as_mut_ptr();
        api.check("cuptiProfilerHostGetConfigImage", unsafe {
            (api.host_get_config_image)(&mut image)
        })?;
        let mut passes = ffi::HostGetNumOfPasses::new();
        passes.configImageSize = self.config.len();
        passes.pConfigImage = self.config.as_mut_ptr();
        api.check("cuptiProfilerHostGetNumOfPasses", unsafe {
            (api.host_get_num_of_passes)(&mut passes)
        })?;
        self.passes = passes.numOfPasses;
        Ok(())
    }

    /// Finds which counters CUPTI refuses, one at a time on a fresh host object, so that the error
    /// names them (the call itself says only "invalid metric").
    fn name_counters(&self, e: CuptiError) -> CuptiError {
        let refused: Vec<&String> = self
            .counters
            .names()
            .iter()
            .filter(|name| !self.accepts(name))
            .collect();
        if refused.is_empty() {
            return e;
        }
        CuptiError::Invalid(format!(
            "{e}; CUPTI does not know {} on {}",
            refused
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", "),
            self.chip
        ))
    }

    fn accepts(&self, name: &str) -> bool {
        let Ok(c) = CString::new(name) else {
            return false;
        };
        let Ok(chip) = CString::new(self.chip.as_str()) else {
            return false;
        };
        let api = self.api;
        let mut host = ffi::HostInitialize::new();
        host.profilerType = ffi::CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        host.pChipName = chip.as_ptr();
        // SAFETY: sized parameter structs; the host object made here is freed here.
        if unsafe { (api.host_initialize)(&mut host) } != ffi::CUPTI_SUCCESS {
            return true; // cannot tell: blame nobody
        }
        let mut pointer = c.as_ptr();
        let mut add = ffi::HostConfigAddMetrics::new();
        add.pHostObject = host.pHostObject;
        add.ppMetricNames = &mut pointer;
        add.numMetrics = 1;
        let ok = unsafe { (api.host_config_add_metrics)(&mut add) } == ffi::CUPTI_SUCCESS;
        let mut done = ffi::HostDeinitialize::new();
        done.pHostObject = host.pHostObject;
        unsafe { (api.host_deinitialize)(&mut done) };
        ok
    }

    /// Collects the counters over `ranges` kernels that `run_pass` launches, once per pass, until
    /// CUPTI has every pass. `run_pass` gets `before(true)` to prepare the pass (put the inputs
    /// back, flush caches) outside the profiled span, and `before(false)` to launch it.
    ///
    /// The range profiler is enabled for each collection and disabled after it: enabling costs
    /// microseconds (H200, 2026-11-26), and a kept one that a second job configured with a new
    /// counter data image killed the child (the image CUPTI still pointed at was gone).
    pub fn collect(
        &mut self,
        ranges: usize,
        run_pass: &mut dyn FnMut(bool) -> Result<(), String>,
    ) -> Result<Collection, CuptiError> {
        let started = Instant::now();
        let api = self.api;
        let mut enable = ffi::RangeEnable::new();
        enable.ctx = self.ctx;
        api.check("cuptiRangeProfilerEnable", unsafe {
            (api.range_enable)(&mut enable)
        })?;
        let enable_s = started.elapsed().as_secs_f64();
        let object = enable.pRangeProfilerObject;
        let result = self.collect_enabled(object, ranges, run_pass);
        let clock = Instant::now();
        let mut disable = ffi::RangeDisable::new();
        disable.pRangeProfilerObject = object;
        let disabled = api.check("cuptiRangeProfilerDisable", unsafe {
            (api.range_disable)(&mut disable)
        });
        let mut collection = result?;
        disabled?;
        collection.phases.enable_s = enable_s;
        collection.phases.disable_s = clock.elapsed().as_secs_f64();
        collection.seconds = started.elapsed().as_secs_f64();
        Ok(collection)
    }

    fn collect_enabled(
        &mut self,
        object: *mut ffi::RangeProfilerObject,
        ranges: usize,
        run_pass: &mut dyn FnMut(bool) -> Result<(), String>,
    ) -> Result<Collection, CuptiError> {
        let api = self.api;
        let mut phases = Phases::default();
        let clock = Instant::now();
        let per_pass = ranges.max(1);
        let mut size = ffi::RangeGetCounterDataSize::new();
        size.pRangeProfilerObject = object;
        size.pMetricNames = self.counters.ptr();
        size.numMetrics = self.counters.names().len();
        size.maxNumOfRanges = ranges.max(1);
        size.maxNumRangeTreeNodes = u32::try_from(ranges.max(1)).unwrap_or(u32::MAX);
        api.check("cuptiRangeProfilerGetCounterDataSize", unsafe {
            (api.range_get_counter_data_size)(&mut size)
        })?;
        let mut data = vec![0u8; size.counterDataSize];
        let mut init = ffi::RangeCounterDataImageInitialize::new();
        init.pRangeProfilerObject = object;
        init.counterDataSize = data.len();
        init.pCounterData = data.as_mut_ptr();
        api.check("cuptiRangeProfilerCounterDataImageInitialize", unsafe {
            (api.range_counter_data_image_initialize)(&mut init)
        })?;
        let mut set = ffi::RangeSetConfig::new();
        set.pRangeProfilerObject = object;
        set.configSize = self.config.len();
        set.pConfig = self.config.as_ptr();
        set.counterDataImageSize = data.len();
        set.pCounterDataImage = data.as_mut_ptr();
        set.range = ffi::CUPTI_AUTO_RANGE;
        set.replayMode = ffi::CUPTI_USER_REPLAY;
        set.maxRangesPerPass = per_pass;
        set.numNestingLevels = 1;
        set.minNestingLevel = 1;
        set.passIndex = 0;
        set.targetNestingLevel = 1;
        api.check("cuptiRangeProfilerSetConfig", unsafe {
            (api.range_set_config)(&mut set)
        })?;
        phases.configure_s = clock.elapsed().as_secs_f64();
        let passes = self.run_passes(object, run_pass, &mut phases)?;
        let clock = Instant::now();
        let mut decode = ffi::RangeDecodeData::new();
        decode.pRangeProfilerObject = object;
        api.check("cuptiRangeProfilerDecodeData", unsafe {
            (api.range_decode_data)(&mut decode)
        })?;
        phases.decode_s = clock.elapsed().as_secs_f64();
        let clock = Instant::now();
        let ranges = self.evaluate(&data)?;
        phases.evaluate_s = clock.elapsed().as_secs_f64();
        phases.ranges_per_pass = per_pass;
        Ok(Collection {
            ranges,
            passes,
            dropped_ranges: decode.numOfRangeDropped,
            seconds: 0.0,
            phases,
        })
    }

    /// Runs passes until CUPTI says every one is submitted.
    fn run_passes(
        &self,
        object: *mut ffi::RangeProfilerObject,
        run_pass: &mut dyn FnMut(bool) -> Result<(), String>,
        phases: &mut Phases,
    ) -> Result<usize, CuptiError> {
        let api = self.api;
        let mut passes = 0usize;
        loop {
            let clock = Instant::now();
            run_pass(true).map_err(CuptiError::Invalid)?;
            phases.prepare_s += clock.elapsed().as_secs_f64();
            let clock = Instant::now();
            let mut start = ffi::RangeStart::new();
            start.pRangeProfilerObject = object;
            api.check("cuptiRangeProfilerStart", unsafe {
                (api.range_start)(&mut start)
            })?;
            let ran = run_pass(false);
            let mut stop = ffi::RangeStop::new();
            stop.pRangeProfilerObject = object;
            let stopped = api.check("cuptiRangeProfilerStop", unsafe {
                (api.range_stop)(&mut stop)
            });
            phases.passes_s += clock.elapsed().as_secs_f64();
            ran.map_err(CuptiError::Invalid)?;
            stopped?;
            passes += 1;
            if stop.isAllPassSubmitted != 0 {
                return Ok(passes);
            }
            // A configuration never needs more passes than the host API counted; a loop past
            // that is CUPTI refusing to finish, not a workload that needs more.
            if passes > self.passes.max(1) * 2 + 2 {
                return Err(CuptiError::Invalid(format!(
                    "CUPTI asked for pass {} of a configuration of {} passes",
                    passes + 1,
                    self.passes
                )));
            }
        }
    }

    /// Every range of a decoded counter data image: its name and its counters' values.
    fn evaluate(&mut self, data: &[u8]) -> Result<Vec<RangeValues>, CuptiError> {
        let api = self.api;
        let mut info = ffi::RangeGetCounterDataInfo::new();
        info.pCounterDataImage = data.as_ptr();
        info.counterDataImageSize = data.len();
        api.check("cuptiRangeProfilerGetCounterDataInfo", unsafe {
            (api.range_get_counter_data_info)(&mut info)
        })?;
        let delimiter = c"/";
        let mut out = Vec::with_capacity(info.numTotalRanges);
        for index in 0..info.numTotalRanges {
            let mut range = ffi::RangeGetRangeInfo::new();
            range.pCounterDataImage = data.as_ptr();
            range.counterDataImageSize = data.len();
            range.rangeIndex = index;
            range.rangeDelimiter = delimiter.as_ptr();
            api.check("cuptiRangeProfilerCounterDataGetRangeInfo", unsafe {
                (api.range_get_range_info)(&mut range)
            })?;
            let name = if range.rangeName.is_null() {
                String::new()
            } else {
                // SAFETY: NUL-terminated, owned by CUPTI until the next call; copied at once.
                unsafe { CStr::from_ptr(range.rangeName) }
                    .to_string_lossy()
                    .into_owned()
            };
            let mut values = vec![f64::NAN; self.counters.names().len()];
            let mut eval = ffi::HostEvaluateToGpuValues::new();
            eval.pHostObject = self.host;
            eval.pCounterDataImage = data.as_ptr();
            eval.counterDataImageSize = data.len();
            eval.rangeIndex = index;
            eval.ppMetricNames = self.counters.ptr();
            eval.numMetrics = values.len();
            eval.pMetricValues = values.as_mut_ptr();
            api.check("cuptiProfilerHostEvaluateToGpuValues", unsafe {
                (api.host_evaluate_to_gpu_values)(&mut eval)
            })?;
            out.push(RangeValues { name, values });
        }
        Ok(out)
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let mut done = ffi::HostDeinitialize::new();
        done.pHostObject = self.host;
        // SAFETY: the host object made in `open`, freed once; then the profiler that `open`
        // initialised, as CUPTI's samples end.
        unsafe { (self.api.host_deinitialize)(&mut done) };
        let mut deinit = ffi::ProfilerDeInitialize::new();
        unsafe { (self.api.profiler_deinitialize)(&mut deinit) };
    }
}

/// The counter availability image of `ctx`: its size first, then the image.
fn counter_availability(api: &Api, ctx: CUcontext) -> Result<Vec<u8>, CuptiError> {
    let mut size = ffi::GetCounterAvailability::new();
    size.ctx = ctx;
    api.check("cuptiProfilerGetCounterAvailability", unsafe {
        (api.get_counter_availability)(&mut size)
    })?;
    let mut image = vec![0u8; size.counterAvailabilityImageSize];
    let mut fill = ffi::GetCounterAvailability::new();
    fill.ctx = ctx;
    fill.counterAvailabilityImageSize = image.len();
    fill.pCounterAvailabilityImage = image.as_mut_ptr();
    api.check("cuptiProfilerGetCounterAvailability", unsafe {
        (api.get_counter_availability)(&mut fill)
    })?;
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collections_made_before_phases_were_recorded_still_read() {
        let old = r#"{"ranges":[{"name":"k","values":[1.0]}],"passes":2,"dropped_ranges":0,"seconds":0.2}"#;
        let c: Collection = serde_json::from_str(old).unwrap();
        assert_eq!(c.phases, Phases::default());
        assert_eq!(c.passes, 2);
    }
}
