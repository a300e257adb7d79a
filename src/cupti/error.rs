//! What goes wrong in CUPTI, and each call's status turned into it with CUPTI's own words.

use std::ffi::{CStr, c_char};

use super::ffi;

/// What went wrong in CUPTI, with the call that said so.
#[derive(Debug, thiserror::Error)]
pub enum CuptiError {
    #[error(
        "CUPTI could not be loaded: {tried}\n  fix: install the CUDA toolkit's CUPTI (extras/CUPTI/lib64), or profile with `--profiler ncu`"
    )]
    NotLoaded { tried: String },
    #[error("{call} failed: {said} (CUPTI error {code})")]
    Call {
        call: &'static str,
        code: u32,
        said: String,
    },
    #[error("{0}")]
    Invalid(String),
}

impl ffi::Api {
    /// Turns a status into `Ok` or an error naming `call` and CUPTI's own words for it.
    pub fn check(&self, call: &'static str, code: ffi::CUptiResult) -> Result<(), CuptiError> {
        if code == ffi::CUPTI_SUCCESS {
            return Ok(());
        }
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: CUPTI writes a pointer to a static string, or leaves it null.
        let said = if unsafe { (self.get_result_string)(code, &mut text) } == ffi::CUPTI_SUCCESS
            && !text.is_null()
        {
            // SAFETY: non-null, NUL-terminated and static, per CUPTI.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        } else {
            "no description".to_string()
        };
        Err(CuptiError::Call { call, code, said })
    }
}
