//! What a build hands on: the module image (PTX, cubin, or relocatable PTX still to be linked) and each kernel's symbol in it.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// A module image ready to load.
#[derive(Debug, Clone)]
pub enum Image {
    Ptx(String),
    Cubin(Vec<u8>),
    /// NVRTC's relocatable PTX (`rdc = true`): loadable only once the driver's JIT linker has
    /// linked it with this device runtime library (done where the GPU is, at load).
    RelocatablePtx {
        ptx: String,
        device_runtime: PathBuf,
    },
}

/// A built module: its image, the symbol of each kernel in it, and how it was built.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub image: Image,
    /// Each kernel name as the manifest wrote it -> its symbol in the module (the mangled name of a C++ kernel).
    pub symbols: BTreeMap<String, String>,
    /// Which compiler built it, with its version (`nvrtc 13.0`, `nvcc 13.0.88`).
    pub compiler: String,
    pub cached: bool,
    pub millis: f64,
}
