//! The device link of kernels that launch kernels (rdc): NVRTC's relocatable PTX linked with the device runtime library by the driver's JIT linker.

use super::device::Gpu;
use super::error::{Doing, RunError};

/// Links NVRTC's relocatable PTX with the device runtime library through the driver's JIT linker
/// (`cuLinkCreate`, `cuLinkAddData`, `cuLinkAddFile` with `CU_JIT_INPUT_LIBRARY`,
/// `cuLinkComplete`), as NVRTC's documentation does for dynamic parallelism; returns the linked
/// cubin, copied out before the link state (which owns it) is destroyed.
pub(super) fn link_device_runtime(
    gpu: &Gpu,
    ptx: &str,
    library: &std::path::Path,
) -> Result<Vec<u8>, RunError> {
    use cudarc::driver::sys;
    use std::ffi::{CString, c_void};
    use std::os::unix::ffi::OsStrExt;
    let ptx_c = CString::new(ptx)
        .map_err(|_| RunError::Invalid("the relocatable PTX holds a NUL byte".into()))?;
    let library_c = CString::new(library.as_os_str().as_bytes()).map_err(|_| {
        RunError::Invalid(format!(
            "the device runtime's path {} holds a NUL byte",
            library.display()
        ))
    })?;
    let name = c"gpu_lab_kernels.ptx";
    gpu.ctx
        .bind_to_thread()
        .doing("making the context current for the device link")?;
    // The linker writes its errors here; the buffer outlives the link state.
    let mut log = vec![0u8; 64 * 1024];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    let linking = format!(
        "linking the relocatable PTX with the device runtime {} (the driver's JIT linker)",
        library.display()
    );
    // SAFETY: two options with their values (a buffer that outlives the state, and its length
    // carried in the pointer as the API specifies); `state` is written by the call.
    unsafe { sys::cuLinkCreate_v2(2, options.as_mut_ptr(), values.as_mut_ptr(), &mut state) }
        .result()
        .doing(linking.clone())?;
    // SAFETY: `state` is live until the destroy below; the PTX and path are NUL-terminated and
    // outlive the calls; the cubin pointer is owned by `state` and copied before the destroy.
    let outcome = unsafe {
        (|| -> Result<Vec<u8>, cudarc::driver::DriverError> {
            sys::cuLinkAddData_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_PTX,
                ptx_c.as_ptr() as *mut c_void,
                ptx_c.as_bytes_with_nul().len(),
                name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
            .result()?;
            sys::cuLinkAddFile_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_LIBRARY,
                library_c.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
            .result()?;
            let (mut cubin, mut size): (*mut c_void, usize) = (std::ptr::null_mut(), 0);
            sys::cuLinkComplete(state, &mut cubin, &mut size).result()?;
            if cubin.is_null() || size == 0 {
                return Err(cudarc::driver::DriverError(
                    sys::CUresult::CUDA_ERROR_INVALID_IMAGE,
                ));
            }
            Ok(std::slice::from_raw_parts(cubin as *const u8, size).to_vec())
        })()
    };
    // SAFETY: destroyed once, after the cubin was copied out.
    let _ = unsafe { sys::cuLinkDestroy(state) };
    outcome.map_err(|source| {
        let text =
            String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(log.len())])
                .trim()
                .to_string();
        RunError::Driver {
            doing: if text.is_empty() {
                linking
            } else {
                format!("{linking}; the linker said:\n{text}")
            },
            source,
        }
    })
}
