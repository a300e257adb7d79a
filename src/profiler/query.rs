//! The device's metric list from `ncu --query-metrics`, cached per chip and ncu version, and the check of requested metrics against it.

use std::path::{Path, PathBuf};

use crate::metrics::MetricDef;
use crate::parse::query_metrics::{self, DeviceMetrics, QueryError, Screened};
use crate::process::CommandError;

/// Why the device's metric list could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("could not run ncu --query-metrics: {0}")]
    Ncu(#[from] CommandError),
    #[error(transparent)]
    Parse(#[from] QueryError),
}
use crate::process;
use crate::profiler::Ncu;
use crate::store::{self, FileKind, read_regular_text};

/// `<cache>/ncu-query-metrics/`: `<ncu version>--<chip>.txt` holds a chip's list, and
/// `<ncu version>--device--<GPU name>` names the chip of a GPU, so a later run reads both without ncu.
const QUERY_DIR: &str = "ncu-query-metrics";

fn cache_paths(
    cache: Option<&Path>,
    ncu: &Ncu,
    device: Option<&str>,
    chip: Option<&str>,
) -> Option<(Option<PathBuf>, Option<PathBuf>)> {
    let dir = cache?.join(QUERY_DIR);
    let version = file_safe(if ncu.version.is_empty() {
        "unknown"
    } else {
        &ncu.version
    });
    Some((
        device.map(|d| dir.join(format!("{version}--device--{}", file_safe(d)))),
        chip.map(|c| dir.join(format!("{version}--{}.txt", file_safe(c)))),
    ))
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn from_cache(cache: Option<&Path>, ncu: &Ncu, device: &str) -> Option<DeviceMetrics> {
    let (alias, _) = cache_paths(cache, ncu, Some(device), None)?;
    let chip = read_regular_text(&alias?, FileKind::METRIC_LIST).ok()?;
    let (_, list) = cache_paths(cache, ncu, None, Some(chip.trim()))?;
    let list = read_regular_text(&list?, FileKind::METRIC_LIST).ok()?;
    let blocks = query_metrics::parse_query_metrics(&list).ok()?;
    blocks.into_iter().find(|b| b.chip == chip.trim())
}

/// The metric list of GPU `gpu` (CUDA's index), named `device` by NVML, from the cache under `cache` or from ncu.
pub fn device_metrics(
    ncu: &Ncu,
    cache: Option<&Path>,
    device: Option<&str>,
    gpu: u32,
) -> Result<DeviceMetrics, ListError> {
    let query = || {
        let f = process::run(
            ncu.command().arg("--query-metrics"),
            &process::Output::Stdout,
            None,
        )?;
        Ok((f.text, f.stderr))
    };
    device_metrics_cached(cache, ncu, device, gpu, query)
}

/// `query` runs `ncu --query-metrics` and gives its stdout and stderr.
fn device_metrics_cached(
    cache: Option<&Path>,
    ncu: &Ncu,
    device: Option<&str>,
    gpu: u32,
    query: impl FnOnce() -> Result<(String, String), ListError>,
) -> Result<DeviceMetrics, ListError> {
    if let Some(hit) = device.and_then(|d| from_cache(cache, ncu, d)) {
        return Ok(hit);
    }
    let (text, stderr) = query()?;
    let blocks = query_metrics::parse_query_metrics(&text).map_err(|e| match e {
        // What ncu said on stderr explains an empty list better than its stdout.
        QueryError::NoList { said } if !stderr.trim().is_empty() => QueryError::NoList {
            said: Some(stderr.trim().to_string()).or(said),
        },
        other => other,
    })?;
    let by_name = blocks
        .iter()
        .find(|b| device.is_some_and(|d| b.device == d));
    // ncu lists one block per device; when NVML's name matches none, the block at the GPU's index
    // is the best guess, but it is not remembered as this GPU's chip.
    let chosen = by_name
        .or_else(|| blocks.get(gpu as usize))
        .unwrap_or(&blocks[0])
        .clone();
    // A cache that cannot be written only costs another query next time; one whose directory is a
    // link to elsewhere is not written.
    if let Some((alias, Some(list))) = cache_paths(cache, ncu, device, Some(&chosen.chip))
        && cache.is_some_and(|c| store::real_subdir(c, Path::new(QUERY_DIR)).is_ok())
        && store::write_atomic(&list, text.as_bytes()).is_ok()
        && by_name.is_some()
        && let Some(alias) = alias
    {
        let _ = store::write_atomic(&alias, chosen.chip.as_bytes());
    }
    Ok(chosen)
}

/// Checks requested metrics against the device before ncu runs: a misspelt raw name is an error,
/// a metric this GPU cannot collect is named in a warning and left out. When the list cannot be
/// had (an ncu that cannot query), everything is kept and ncu's own errors still apply.
pub fn screen_for_device(
    ncu: &Ncu,
    cache: Option<&Path>,
    device: Option<&str>,
    gpu: u32,
    defs: Vec<MetricDef>,
) -> anyhow::Result<Screened> {
    let list = match device_metrics(ncu, cache, device, gpu) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("warning: metric names not checked against this GPU ({e})");
            return Ok(Screened {
                collectable: defs,
                unavailable: Vec::new(),
            });
        }
    };
    let screened = query_metrics::screen(defs, &list)?;
    for (name, why) in &screened.unavailable {
        eprintln!("warning: {name} left out: {why}");
    }
    Ok(screened)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// `ncu --query-metrics` of an H200, stored gzipped (1 MB plain).
    const H200_LIST_GZ: &[u8] =
        include_bytes!("../../tests/fixtures/ncu-h200/query-metrics.txt.gz");

    fn h200_list() -> String {
        use std::io::Read;
        let mut text = String::new();
        flate2::read::GzDecoder::new(H200_LIST_GZ)
            .read_to_string(&mut text)
            .unwrap();
        text
    }

    /// A stand-in `ncu --query-metrics` that gives the H200's captured list and counts its calls.
    fn h200_query(calls: &Cell<u32>) -> Result<(String, String), ListError> {
        calls.set(calls.get() + 1);
        Ok((
            h200_list(),
            "==WARNING== a message on stderr, not a metric".to_string(),
        ))
    }

    // Orchestration only: a stand-in query that gives the H200's captured list and counts its calls.
    #[test]
    fn the_list_is_queried_once_then_read_from_the_cache() {
        let d = tempfile::tempdir().unwrap();
        let calls = Cell::new(0);
        let query = || h200_query(&calls);
        let ncu = Ncu {
            path: "ncu".into(),
            version: "Version 2025.3.1.0".into(),
        };
        let cache = d.path().join("cache");
        for _ in 0..2 {
            let list =
                device_metrics_cached(Some(&cache), &ncu, Some("NVIDIA H200"), 0, query).unwrap();
            assert_eq!(list.chip, "gh100");
        }
        assert_eq!(calls.get(), 1);
        assert!(
            cache
                .join("ncu-query-metrics/Version_2025.3.1.0--gh100.txt")
                .is_file()
        );
        // Another ncu version asks again.
        let newer = Ncu {
            version: "Version 2026.1".into(),
            ..ncu
        };
        device_metrics_cached(Some(&cache), &newer, Some("NVIDIA H200"), 0, query).unwrap();
        assert_eq!(calls.get(), 2);
    }

    #[test]
    fn a_gpu_whose_name_matches_no_block_is_not_cached_as_that_chip() {
        let d = tempfile::tempdir().unwrap();
        let calls = Cell::new(0);
        let query = || h200_query(&calls);
        let ncu = Ncu {
            path: "ncu".into(),
            version: "Version 2025.3.1.0".into(),
        };
        let cache = d.path().join("cache");
        for _ in 0..2 {
            let list = device_metrics_cached(Some(&cache), &ncu, Some("NVIDIA H200 NVL"), 0, query)
                .unwrap();
            assert_eq!(list.chip, "gh100");
        }
        assert_eq!(
            calls.get(),
            2,
            "a guessed chip must not be remembered for this GPU"
        );
        assert!(
            !cache
                .join("ncu-query-metrics/Version_2025.3.1.0--device--NVIDIA_H200_NVL")
                .exists()
        );
    }

    #[test]
    fn an_ncu_that_cannot_list_is_an_error_not_a_panic() {
        let ncu = Ncu {
            path: "/bin/true".into(),
            version: String::new(),
        };
        assert!(
            device_metrics(&ncu, None, None, 0)
                .unwrap_err()
                .to_string()
                .contains("no metric list")
        );
    }
}
