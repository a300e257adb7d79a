//! Which build is running: the git commit compiled in by `build.rs` and the sha256 of the executable itself.

use sha2::{Digest, Sha256};

use crate::records::BuildInfo;

/// The running build: its commit (from the build), whether the tree was dirty, and the sha256 of
/// the executable file (read once; absent when it cannot be read).
pub fn this_build() -> BuildInfo {
    BuildInfo {
        commit: option_env!("GPU_LAB_COMMIT").map(str::to_string),
        dirty: option_env!("GPU_LAB_DIRTY") == Some("1"),
        binary_sha256: binary_sha256(),
    }
}

fn binary_sha256() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let mut file = std::fs::File::open(exe).ok()?;
    let mut hasher = Sha256::new();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        match std::io::Read::read(&mut file, &mut chunk).ok()? {
            0 => break,
            n => hasher.update(&chunk[..n]),
        }
    }
    Some(crate::suite::sources::hex(&hasher.finalize()))
}
