//! Programs the build's unit tests plan for: no source file behind them.

use crate::suite::{Compiler, Program};

/// `k.cu` for NVRTC with `options` and one include directory, `/p/inc`.
pub(super) fn program(options: &[&str]) -> Program {
    Program {
        source_path: "k.cu".into(),
        options: options.iter().map(|s| s.to_string()).collect(),
        include_dirs: vec!["/p/inc".into()],
        compiler: Compiler::Nvrtc,
        rdc: false,
        arch_specific: false,
    }
}

/// `program(&["-DBLOCK=512"])`, built with `compiler` as relocatable device code.
pub(super) fn rdc(compiler: Compiler) -> Program {
    Program {
        compiler,
        rdc: true,
        ..program(&["-DBLOCK=512"])
    }
}
