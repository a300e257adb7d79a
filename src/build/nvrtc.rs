//! Compiling with NVRTC (through cudarc): every kernel added as a name expression, so each C++ name's lowered symbol is known.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::path::Path;

use super::image::Image;

fn cstring(what: &str, text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|_| format!("the {what} contains a NUL byte"))
}

/// NVRTC with every kernel added as a name expression, so templates are instantiated and each
/// name's lowered (mangled) symbol is known; the image is NVRTC's PTX, or with `cubin` the SASS it
/// assembled (see `caps_registers`). Err: NVRTC's log.
pub(super) fn nvrtc_compile(
    source: &str,
    path: &Path,
    options: &[String],
    kernels: &[String],
    cubin: bool,
) -> Result<(Image, BTreeMap<String, String>), String> {
    use cudarc::nvrtc::{result, sys};
    let program = result::create_program(
        &cstring("source", source)?,
        Some(&cstring("path", &path.display().to_string())?),
    )
    .map_err(|e| format!("{e:?}"))?;
    let names: Vec<CString> = kernels
        .iter()
        .map(|k| cstring("kernel name", k))
        .collect::<Result<_, _>>()?;
    // cudarc turns each option into a C string and panics on a NUL byte: refuse it here.
    for o in options {
        cstring("compiler option", o)?;
    }
    // SAFETY: `program` is a live NVRTC program until the destroy at the end; every string passed
    // is a NUL-terminated CString that outlives the call; lowered names are copied out before destroy.
    unsafe {
        let outcome = (|| -> Result<(Image, BTreeMap<String, String>), String> {
            for n in &names {
                sys::nvrtcAddNameExpression(program, n.as_ptr())
                    .result()
                    .map_err(|e| format!("adding name expression {n:?}: {e:?}"))?;
            }
            if result::compile_program(program, options).is_err() {
                let log = result::get_program_log(program).map_err(|e| format!("{e:?}"))?;
                return Err(CStr::from_ptr(log.as_ptr())
                    .to_string_lossy()
                    .trim()
                    .to_string());
            }
            let mut symbols = BTreeMap::new();
            for (k, n) in kernels.iter().zip(&names) {
                let mut lowered: *const std::ffi::c_char = std::ptr::null();
                sys::nvrtcGetLoweredName(program, n.as_ptr(), &mut lowered)
                    .result()
                    .map_err(|e| format!("name expression `{k}`: {e:?}"))?;
                if lowered.is_null() {
                    return Err(format!("name expression `{k}` has no lowered name"));
                }
                symbols.insert(
                    k.clone(),
                    CStr::from_ptr(lowered).to_string_lossy().to_string(),
                );
            }
            if cubin {
                let mut size = 0usize;
                sys::nvrtcGetCUBINSize(program, &mut size)
                    .result()
                    .map_err(|e| format!("asking for NVRTC's cubin: {e:?}"))?;
                if size == 0 {
                    return Err("NVRTC built no cubin (the target is a virtual architecture), so the register cap (--maxrregcount) cannot reach the code".into());
                }
                let mut bytes = vec![0u8; size];
                sys::nvrtcGetCUBIN(program, bytes.as_mut_ptr().cast())
                    .result()
                    .map_err(|e| format!("reading NVRTC's cubin: {e:?}"))?;
                return Ok((Image::Cubin(bytes), symbols));
            }
            let ptx = result::get_ptx(program).map_err(|e| format!("{e:?}"))?;
            Ok((
                Image::Ptx(CStr::from_ptr(ptx.as_ptr()).to_string_lossy().to_string()),
                symbols,
            ))
        })();
        let _ = result::destroy_program(program);
        outcome
    }
}
