//! The command line's value parsers: each turns one flag's text into its value or says what is wrong and how to write it (clap prints the message with the flag's name).

/// `--gpus`: every GPU of the host, or these indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSelection {
    All,
    Indices(Vec<u32>),
}

/// The highest GPU index `--gpu` and `--gpus` accept: CUDA numbers a host's GPUs from 0, and no
/// host has a thousand (a list of `--gpus` is then at most 1024 indices long).
pub const MAX_GPU_INDEX: u32 = 1023;

pub(super) fn gpu_selection(s: &str) -> Result<GpuSelection, String> {
    if s.trim() == "all" {
        return Ok(GpuSelection::All);
    }
    let mut indices: Vec<u32> = Vec::new();
    for part in s.split(',') {
        let i: u32 = part.trim().parse().map_err(|_| format!("`{part}` is not a GPU index: write `all` or indices such as 0,2 (as nvidia-smi numbers them)"))?;
        if i > MAX_GPU_INDEX {
            return Err(format!(
                "GPU index {i} is out of range: indices are 0 to {MAX_GPU_INDEX}"
            ));
        }
        if indices.contains(&i) {
            return Err(format!(
                "GPU {i} is named twice: a GPU runs one job at a time"
            ));
        }
        indices.push(i);
    }
    Ok(GpuSelection::Indices(indices))
}

pub(super) fn slowdown(s: &str) -> Result<(String, f64), String> {
    let (variant, factor) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not VARIANT=FACTOR"))?;
    Ok((variant.to_string(), bounded(factor, 1e-6, 1e6)?))
}

pub(super) fn parse_shard(text: &str) -> Result<crate::scheduler::Shard, String> {
    crate::scheduler::Shard::parse(text)
}

/// A number in `[low, high]` (`low` > 0: a positive one), or why not with the range.
fn bounded(s: &str, low: f64, high: f64) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (low..=high).contains(&v) => Ok(v),
        Ok(v) if v.is_finite() && v <= 0.0 && low > 0.0 => Err(format!(
            "`{s}` is not a positive number: the allowed range is {low} to {high}"
        )),
        Ok(v) if v.is_finite() => Err(format!(
            "{v} is out of range: the allowed range is {low} to {high}"
        )),
        _ => Err(format!(
            "`{s}` is not a number: write one from {low} to {high}"
        )),
    }
}

/// `--max-seconds`: over 0, at most an hour (a job's child is killed after `--timeout` anyway).
pub(super) fn max_seconds(s: &str) -> Result<f64, String> {
    bounded(s, 1e-3, 3600.0)
}

/// A percentage threshold or target: over 0, at most 100.
pub(super) fn percent(s: &str) -> Result<f64, String> {
    bounded(s, 1e-6, 100.0)
}

/// `--noise-threshold`: over 0, at most 1000% (a job ten times slower); more would print
/// bounds no reference format can hold.
pub(super) fn noise_threshold(s: &str) -> Result<f64, String> {
    bounded(s, 1e-6, 1000.0)
}

/// `--noise-floor-us`: 0 to an hour in microseconds.
pub(super) fn noise_floor_us(s: &str) -> Result<f64, String> {
    bounded(s, 0.0, 3.6e9)
}

pub(super) fn measure(s: &str) -> Result<crate::history::Measure, String> {
    crate::history::Measure::parse(s)
        .ok_or_else(|| format!("`{s}` is not a measure: write time_ms, gb_per_s or gflop_per_s"))
}

/// `--since`: a date or an RFC 3339 time, kept as text that compares with a run's start time.
pub(super) fn since_date(s: &str) -> Result<String, String> {
    let s = s.trim();
    if chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() {
        return Ok(s.to_string());
    }
    match chrono::DateTime::parse_from_rfc3339(s) {
        Ok(t) => Ok(t
            .with_timezone(&chrono::Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        Err(_) => Err(format!(
            "`{s}` is not a date: write YYYY-MM-DD (UTC) or an RFC 3339 time such as 2026-11-25T10:00:00Z"
        )),
    }
}
