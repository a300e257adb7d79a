//! Kernel durations from CUPTI's Activity API in the timing child: concurrent-kernel records (start and end on the GPU) collected around the timed samples, each sample's window marked with CUPTI's own clock.
//!
//! CUPTI hands records back in buffers through two C callbacks that carry no user data, so the
//! buffers' records are parsed (`activity_records`) into a process-wide list that `Collector`
//! takes when it finishes. The timing child times one job at a time, on one thread.

use std::ffi::{CStr, c_char, c_void};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use super::activity_records::{
    self as records, ActivitySamples, KIND_CONCURRENT_KERNEL, KernelSpan, SampleWindow,
};
use super::ffi::{CUPTI_SUCCESS, CUptiResult};

type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type CompleteFn = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

/// The Activity entry points, from `cupti_activity.h` and `cupti_version.h` (CUDA 13).
struct ActivityApi {
    get_result_string: unsafe extern "C" fn(CUptiResult, *mut *const c_char) -> CUptiResult,
    get_version: unsafe extern "C" fn(*mut u32) -> CUptiResult,
    enable: unsafe extern "C" fn(u32) -> CUptiResult,
    disable: unsafe extern "C" fn(u32) -> CUptiResult,
    register_callbacks: unsafe extern "C" fn(RequestFn, CompleteFn) -> CUptiResult,
    flush_all: unsafe extern "C" fn(u32) -> CUptiResult,
    get_next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> CUptiResult,
    get_timestamp: unsafe extern "C" fn(*mut u64) -> CUptiResult,
    dropped_records: unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CUptiResult,
}

/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`: flush buffers that are not full too.
const FLUSH_FORCED: u32 = 1;
/// `CUPTI_ERROR_MAX_LIMIT_REACHED`: `cuptiActivityGetNextRecord` at the end of a buffer.
const MAX_LIMIT_REACHED: CUptiResult = 12;
/// Each buffer handed to CUPTI: 1 MiB holds about 4,800 kernel records.
const BUFFER_BYTES: usize = 1 << 20;

impl ActivityApi {
    fn check(&self, call: &str, code: CUptiResult) -> Result<(), String> {
        if code == CUPTI_SUCCESS {
            return Ok(());
        }
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: CUPTI writes a pointer to a static NUL-terminated string, or leaves it null.
        let said = if unsafe { (self.get_result_string)(code, &mut text) } == CUPTI_SUCCESS
            && !text.is_null()
        {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        } else {
            "no description".into()
        };
        Err(format!("{call} failed: {said} (CUPTI error {code})"))
    }
}

static API: OnceLock<Result<ActivityApi, String>> = OnceLock::new();

/// What the completion callback collected since the collector began.
#[derive(Default)]
struct Collected {
    spans: Vec<KernelSpan>,
    errors: Vec<String>,
    /// Raw records kept for `--activity-dump` (bytes, name pointer zeroed; the name): all of them,
    /// the caller picks.
    dump: Option<Vec<(Vec<u8>, String)>>,
}

static COLLECTED: Mutex<Collected> = Mutex::new(Collected {
    spans: Vec::new(),
    errors: Vec::new(),
    dump: None,
});

fn collected() -> std::sync::MutexGuard<'static, Collected> {
    COLLECTED.lock().unwrap_or_else(|e| e.into_inner())
}

fn resolve(toolkit: Option<&Path>) -> Result<ActivityApi, String> {
    let lib = super::open_library(toolkit).map_err(|e| e.to_string())?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: a libcupti; the type is the header's declaration of the symbol.
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("libcupti has no `{}`: {e}", $name))?
        };
    }
    let api = ActivityApi {
        get_result_string: sym!("cuptiGetResultString"),
        get_version: sym!("cuptiGetVersion"),
        enable: sym!("cuptiActivityEnable"),
        disable: sym!("cuptiActivityDisable"),
        register_callbacks: sym!("cuptiActivityRegisterCallbacks"),
        flush_all: sym!("cuptiActivityFlushAll"),
        get_next_record: sym!("cuptiActivityGetNextRecord"),
        get_timestamp: sym!("cuptiGetTimestamp"),
        dropped_records: sym!("cuptiActivityGetNumDroppedRecords"),
    };
    // Never unloaded: CUPTI's threads and exit handlers live in the library (see `ffi::Api::resolve`).
    std::mem::forget(lib);
    let mut version = 0u32;
    // SAFETY: writes one u32.
    api.check("cuptiGetVersion", unsafe {
        (api.get_version)(&mut version)
    })?;
    if !records::layout_known(version) {
        return Err(records::unknown_layout_message(version));
    }
    // SAFETY: two functions with the callback types the header declares, registered once.
    api.check("cuptiActivityRegisterCallbacks", unsafe {
        (api.register_callbacks)(buffer_requested, buffer_completed)
    })?;
    Ok(api)
}

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
    // u64 words: CUPTI wants 8-byte aligned buffers (ACTIVITY_RECORD_ALIGNMENT).
    let words = vec![0u64; BUFFER_BYTES / 8].into_boxed_slice();
    // SAFETY: CUPTI passes three valid out-pointers.
    unsafe {
        *buffer = Box::into_raw(words) as *mut u8;
        *size = BUFFER_BYTES;
        *max = 0;
    }
}

unsafe extern "C" fn buffer_completed(
    _ctx: *mut c_void,
    _stream: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    if let Some(Ok(api)) = API.get() {
        // SAFETY: a buffer of ours, `valid` bytes of it written by CUPTI.
        unsafe { read_buffer(api, buffer, valid) };
    }
    // SAFETY: made by `buffer_requested` as a boxed slice of size/8 words; CUPTI is done with it.
    drop(unsafe {
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            buffer as *mut u64,
            size / 8,
        ))
    });
}

/// Walks a completed buffer: each record's bytes run to the next record (the last to `valid`).
unsafe fn read_buffer(api: &ActivityApi, buffer: *mut u8, valid: usize) {
    let mut starts = Vec::new();
    let mut record: *mut u8 = std::ptr::null_mut();
    loop {
        // SAFETY: CUPTI's iterator over its own buffer.
        let code = unsafe { (api.get_next_record)(buffer, valid, &mut record) };
        if code != CUPTI_SUCCESS {
            if code != MAX_LIMIT_REACHED {
                let e = api.check("cuptiActivityGetNextRecord", code);
                collected().errors.extend(e.err());
            }
            break;
        }
        starts.push(record as usize - buffer as usize);
    }
    // SAFETY: the first `valid` bytes are CUPTI's records.
    let bytes = unsafe { std::slice::from_raw_parts(buffer as *const u8, valid) };
    let mut out = collected();
    for (i, &at) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(valid);
        match records::parse_kernel(&bytes[at..end]) {
            Ok(Some(k)) => {
                // SAFETY: CUPTI's name string lives as long as the process (it owns it).
                let name = (k.name_ptr != 0).then(|| {
                    unsafe { CStr::from_ptr(k.name_ptr as *const c_char) }
                        .to_string_lossy()
                        .into_owned()
                });
                let name = name.unwrap_or_default();
                out.spans.push(KernelSpan {
                    start_ns: k.start_ns,
                    end_ns: k.end_ns,
                    flush: records::is_flush_kernel(&name),
                    shared_executed: k.shared_executed,
                });
                if let Some(dump) = out.dump.as_mut() {
                    let mut raw = bytes[at..end].to_vec();
                    raw[records::OFFSET_NAME..records::OFFSET_NAME + 8].fill(0);
                    dump.push((raw, name));
                }
            }
            Ok(None) => {}
            Err(e) => out.errors.push(e),
        }
    }
}

/// Concurrent-kernel activity over one job's samples.
pub struct Collector {
    api: &'static ActivityApi,
    windows: Vec<SampleWindow>,
    begun: Option<u64>,
    error: Option<String>,
}

/// What a collector found: the per-sample durations, records dropped, raw records dumped, and
/// the first thing that went wrong (the durations are then partial or absent).
pub struct Finished {
    pub samples: ActivitySamples,
    pub dropped: usize,
    pub dump: Vec<(Vec<u8>, String)>,
    /// The samples' windows, in CUPTI's clock.
    pub windows: Vec<SampleWindow>,
    /// Every kernel recorded, in start order (the profile pass reads each launch's carveout).
    pub spans: Vec<KernelSpan>,
    pub error: Option<String>,
}

impl Collector {
    /// Loads CUPTI (once a process), clears what was collected, and enables concurrent-kernel
    /// records (CUPTI_ACTIVITY_KIND_KERNEL would serialise kernels). `dump`: keep raw records too.
    pub fn start(toolkit: Option<&Path>, dump: bool) -> Result<Collector, String> {
        let api = API.get_or_init(|| resolve(toolkit)).as_ref()?;
        *collected() = Collected {
            dump: dump.then(Vec::new),
            ..Collected::default()
        };
        // SAFETY: a kind CUPTI 13 knows.
        api.check("cuptiActivityEnable(CONCURRENT_KERNEL)", unsafe {
            (api.enable)(KIND_CONCURRENT_KERNEL)
        })?;
        Ok(Collector {
            api,
            windows: Vec::new(),
            begun: None,
            error: None,
        })
    }

    fn now(&mut self) -> Option<u64> {
        let mut t = 0u64;
        // SAFETY: writes one u64.
        match self.api.check("cuptiGetTimestamp", unsafe {
            (self.api.get_timestamp)(&mut t)
        }) {
            Ok(()) => Some(t),
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }

    /// Before a sample's work is enqueued.
    pub fn begin_sample(&mut self) {
        self.begun = self.now();
    }

    /// After the host waited for the sample; `runs`: the variant's runs in it.
    pub fn end_sample(&mut self, runs: u32) {
        if let (Some(begin_ns), Some(end_ns)) = (self.begun.take(), self.now()) {
            self.windows.push(SampleWindow {
                begin_ns,
                end_ns,
                runs,
            });
        }
    }

    /// Flushes every buffer, disables the records, and sums each sample's kernels.
    pub fn finish(mut self) -> Finished {
        let api = self.api;
        // SAFETY: plain calls; the completion callback runs inside the flush.
        let flushed = api.check("cuptiActivityFlushAll", unsafe {
            (api.flush_all)(FLUSH_FORCED)
        });
        let disabled = api.check("cuptiActivityDisable", unsafe {
            (api.disable)(KIND_CONCURRENT_KERNEL)
        });
        let mut dropped = 0usize;
        // SAFETY: NULL context and stream 0: the global count, written to `dropped`.
        let counted = api.check("cuptiActivityGetNumDroppedRecords", unsafe {
            (api.dropped_records)(std::ptr::null_mut(), 0, &mut dropped)
        });
        let mut c = std::mem::take(&mut *collected());
        for e in [flushed.err(), disabled.err(), counted.err()]
            .into_iter()
            .flatten()
            .chain(c.errors.drain(..))
        {
            self.error.get_or_insert(e);
        }
        c.spans.sort_by_key(|s| s.start_ns);
        Finished {
            samples: records::summarize_samples(&c.spans, &self.windows),
            dropped,
            dump: c.dump.unwrap_or_default(),
            windows: self.windows,
            spans: c.spans,
            error: self.error,
        }
    }
}
