//! The on-disk cache of built modules: the key (a hash of everything that changes the module) and each entry's image beside its description.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::image::{Compiled, Image};
use crate::store::{FileKind, read_regular, real_subdir, write_atomic, write_json};
use crate::suite::sources::hex;

/// What the cache keeps beside an image.
#[derive(serde::Serialize, serde::Deserialize)]
struct CacheEntry {
    cubin: bool,
    symbols: BTreeMap<String, String>,
    compiler: String,
    /// Relocatable PTX still to be linked with this device runtime library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    device_runtime: Option<PathBuf>,
}

/// Cache key: anything that changes the module changes the key.
pub fn cache_key(source: &str, options: &[String], kernels: &[String], compiler: &str) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    for part in options
        .iter()
        .chain([&"\u{1}kernels".to_string()])
        .chain(kernels)
    {
        h.update([0u8]);
        h.update(part.as_bytes());
    }
    h.update(compiler.as_bytes());
    hex(&h.finalize())
}

pub(super) fn read_cache(base: &Path) -> Option<Compiled> {
    let entry: CacheEntry = serde_json::from_slice(
        &read_regular(&base.with_extension("json"), FileKind::COMPILED).ok()?,
    )
    .ok()?;
    let bytes = read_regular(&base.with_extension("image"), FileKind::COMPILED).ok()?;
    let image = match (entry.cubin, entry.device_runtime) {
        (true, _) => Image::Cubin(bytes),
        (false, None) => Image::Ptx(String::from_utf8(bytes).ok()?),
        (false, Some(device_runtime)) => Image::RelocatablePtx {
            ptx: String::from_utf8(bytes).ok()?,
            device_runtime,
        },
    };
    Some(Compiled {
        image,
        symbols: entry.symbols,
        compiler: entry.compiler,
        cached: true,
        millis: 0.0,
    })
}

/// Saves an entry as `modules/<key>.image` and `.json` under `cache_dir` (`modules/` refused when
/// it is a link to elsewhere).
pub(super) fn write_cache(cache_dir: &Path, key: &str, c: &Compiled) -> anyhow::Result<()> {
    let base = real_subdir(cache_dir, Path::new("modules"))?.join(key);
    let (cubin, bytes, device_runtime) = match &c.image {
        Image::Ptx(p) => (false, p.as_bytes(), None),
        Image::Cubin(b) => (true, b.as_slice(), None),
        Image::RelocatablePtx {
            ptx,
            device_runtime,
        } => (false, ptx.as_bytes(), Some(device_runtime.clone())),
    };
    // The image first: an entry is only read when its description exists.
    write_atomic(&base.with_extension("image"), bytes)?;
    write_json(
        &base.with_extension("json"),
        &CacheEntry {
            cubin,
            symbols: c.symbols.clone(),
            compiler: c.compiler.clone(),
            device_runtime,
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::plan::BuildPlan;
    use super::super::test_programs::{program, rdc};
    use super::*;
    use crate::suite::{Compiler, Program};

    #[test]
    fn key_changes_with_every_input() {
        let o = vec!["-DTILE=32".to_string()];
        let ks = vec!["k<32>".to_string()];
        let k = cache_key("src", &o, &ks, "nvrtc 13.0");
        assert_eq!(k, cache_key("src", &o, &ks, "nvrtc 13.0"));
        assert_ne!(k, cache_key("src2", &o, &ks, "nvrtc 13.0"));
        assert_ne!(
            k,
            cache_key("src", &["-DTILE=64".to_string()], &ks, "nvrtc 13.0")
        );
        assert_ne!(
            k,
            cache_key("src", &o, &["k<64>".to_string()], "nvrtc 13.0")
        );
        assert_ne!(k, cache_key("src", &o, &ks, "nvrtc 13.1"));
        assert_ne!(k, cache_key("src", &o, &ks, "nvcc 13.0.88"));
        // Option boundaries matter: ["-a", "b"] is not ["-ab"].
        assert_ne!(
            cache_key("s", &["-a".into(), "b".into()], &[], "c"),
            cache_key("s", &["-ab".into()], &[], "c")
        );
    }

    #[test]
    fn the_cache_key_changes_with_rdc_the_link_and_the_device_runtime() {
        let lib = Path::new("/cuda/lib64/libcudadevrt.a");
        let key = |p: &Program, lib: &Path| {
            cache_key(
                "src",
                &BuildPlan::new(p, "sm_90", Some(lib)).key_parts(p.rdc),
                &["k".to_string()],
                "nvcc 13.0.88",
            )
        };
        let (plain, with_rdc) = (
            Program {
                compiler: Compiler::Nvcc,
                ..program(&[])
            },
            rdc(Compiler::Nvcc),
        );
        let with_rdc_same_options = Program {
            options: vec![],
            ..with_rdc.clone()
        };
        assert_ne!(key(&plain, lib), key(&with_rdc_same_options, lib));
        assert_ne!(
            key(&with_rdc, lib),
            key(&with_rdc, Path::new("/other/lib/libcudadevrt.a"))
        );
        assert_eq!(key(&with_rdc, lib), key(&with_rdc, lib));
        // NVRTC: the flag alone (its options also change) moves the key.
        let nvrtc = |rdc: bool| {
            BuildPlan::new(
                &Program {
                    rdc,
                    ..program(&[])
                },
                "sm_90",
                Some(lib),
            )
            .key_parts(rdc)
        };
        assert_ne!(nvrtc(false), nvrtc(true));
        assert!(nvrtc(true).contains(&"\u{1}rdc=true".to_string()));
    }

    #[test]
    fn the_cache_key_changes_with_the_arch_specific_target() {
        use super::super::plan::target_arch;
        let key = |specific: bool, compiler: Compiler| {
            let p = Program {
                compiler,
                arch_specific: specific,
                ..program(&[])
            };
            let arch = target_arch("sm_90", p.arch_specific).unwrap();
            cache_key(
                "src",
                &BuildPlan::new(&p, &arch, None).key_parts(p.rdc),
                &["k".to_string()],
                "nvrtc 13.0",
            )
        };
        for compiler in [Compiler::Nvrtc, Compiler::Nvcc] {
            assert_ne!(key(false, compiler), key(true, compiler));
            assert_eq!(key(true, compiler), key(true, compiler));
        }
    }
}
