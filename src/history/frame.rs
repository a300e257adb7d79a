//! History rows as a polars DataFrame and as Parquet bytes, and back (pure: the bytes are written and read by `store/history.rs`).
//!
//! The columns, in order, are [`COLUMNS`]; `samples` is a list of f64, `commit` may be null.
//! docs/history.md documents them for users who read the files with polars or pandas.

use std::io::Cursor;

use polars::prelude::*;

use super::row::{HistoryRow, Measure};

/// The columns of a history file, in order.
pub const COLUMNS: [&str; 22] = [
    "run_id",
    "started",
    "suite",
    "fingerprint",
    "gpu",
    "driver",
    "cuda",
    "cache",
    "clock_policy",
    "mock",
    "commit",
    "dirty",
    "gpu_lab_version",
    "job_id",
    "variant",
    "group",
    "label",
    "measure",
    "median",
    "ci_low",
    "ci_high",
    "samples",
];

fn strings(rows: &[HistoryRow], name: &str, f: impl Fn(&HistoryRow) -> &str) -> Column {
    Column::new(
        name.into(),
        rows.iter().map(|r| f(r).to_string()).collect::<Vec<_>>(),
    )
}

fn floats(rows: &[HistoryRow], name: &str, f: impl Fn(&HistoryRow) -> f64) -> Column {
    Column::new(name.into(), rows.iter().map(f).collect::<Vec<_>>())
}

/// The rows as one frame of [`COLUMNS`].
pub fn to_frame(rows: &[HistoryRow]) -> PolarsResult<DataFrame> {
    let samples: Vec<Series> = rows
        .iter()
        .map(|r| Series::new("".into(), &r.samples))
        .collect();
    let mut samples = Series::new("samples".into(), samples);
    if rows.is_empty() {
        samples = samples.cast(&DataType::List(Box::new(DataType::Float64)))?;
    }
    DataFrame::new_infer_height(vec![
        strings(rows, "run_id", |r| &r.run_id),
        strings(rows, "started", |r| &r.started),
        strings(rows, "suite", |r| &r.suite),
        strings(rows, "fingerprint", |r| &r.fingerprint),
        strings(rows, "gpu", |r| &r.gpu),
        strings(rows, "driver", |r| &r.driver),
        strings(rows, "cuda", |r| &r.cuda),
        strings(rows, "cache", |r| &r.cache),
        strings(rows, "clock_policy", |r| &r.clock_policy),
        Column::new(
            "mock".into(),
            rows.iter().map(|r| r.mock).collect::<Vec<_>>(),
        ),
        Column::new(
            "commit".into(),
            rows.iter().map(|r| r.commit.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "dirty".into(),
            rows.iter().map(|r| r.dirty).collect::<Vec<_>>(),
        ),
        strings(rows, "gpu_lab_version", |r| &r.gpu_lab_version),
        strings(rows, "job_id", |r| &r.job_id),
        strings(rows, "variant", |r| &r.variant),
        strings(rows, "group", |r| &r.group),
        strings(rows, "label", |r| &r.label),
        strings(rows, "measure", |r| r.measure.name()),
        floats(rows, "median", |r| r.median),
        floats(rows, "ci_low", |r| r.ci_low),
        floats(rows, "ci_high", |r| r.ci_high),
        samples.into(),
    ])
}

/// The rows as Parquet bytes (zstd, polars' default).
pub fn to_parquet(rows: &[HistoryRow]) -> PolarsResult<Vec<u8>> {
    let mut df = to_frame(rows)?;
    let mut bytes = Vec::new();
    ParquetWriter::new(&mut bytes).finish(&mut df)?;
    Ok(bytes)
}

/// Parquet bytes back as rows; a file without one of [`COLUMNS`], or with a null where a value
/// must be, is an error that names the column.
pub fn from_parquet(bytes: &[u8]) -> PolarsResult<Vec<HistoryRow>> {
    let df = ParquetReader::new(Cursor::new(bytes)).finish()?;
    from_frame(&df)
}

fn text_column(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<String>>> {
    Ok(df
        .column(name)?
        .str()?
        .iter()
        .map(|v| v.map(str::to_string))
        .collect())
}

fn required<T>(values: Vec<Option<T>>, name: &str) -> PolarsResult<Vec<T>> {
    values
        .into_iter()
        .map(|v| v.ok_or_else(|| polars_err!(ComputeError: "history column `{name}` holds a null")))
        .collect()
}

fn texts(df: &DataFrame, name: &str) -> PolarsResult<Vec<String>> {
    required(text_column(df, name)?, name)
}

fn bools(df: &DataFrame, name: &str) -> PolarsResult<Vec<bool>> {
    required(df.column(name)?.bool()?.iter().collect(), name)
}

fn numbers(df: &DataFrame, name: &str) -> PolarsResult<Vec<f64>> {
    required(df.column(name)?.f64()?.iter().collect(), name)
}

/// A frame of [`COLUMNS`] back as rows.
pub fn from_frame(df: &DataFrame) -> PolarsResult<Vec<HistoryRow>> {
    let t = |name: &str| texts(df, name);
    let (run_id, started, suite, fingerprint) =
        (t("run_id")?, t("started")?, t("suite")?, t("fingerprint")?);
    let (gpu, driver, cuda, cache, clock_policy) = (
        t("gpu")?,
        t("driver")?,
        t("cuda")?,
        t("cache")?,
        t("clock_policy")?,
    );
    let (version, job_id, variant, group, label) = (
        t("gpu_lab_version")?,
        t("job_id")?,
        t("variant")?,
        t("group")?,
        t("label")?,
    );
    let measures = t("measure")?
        .into_iter()
        .map(|m| Measure::parse(&m).ok_or_else(|| polars_err!(ComputeError: "history column `measure` holds `{}`, not a measure gpu-lab knows", m.escape_debug())))
        .collect::<PolarsResult<Vec<_>>>()?;
    let commit = text_column(df, "commit")?;
    let (mock, dirty) = (bools(df, "mock")?, bools(df, "dirty")?);
    let (median, low, high) = (
        numbers(df, "median")?,
        numbers(df, "ci_low")?,
        numbers(df, "ci_high")?,
    );
    let lists = df.column("samples")?.list()?;
    let samples: Vec<Vec<f64>> = (0..lists.len())
        .map(|i| -> PolarsResult<Vec<f64>> {
            let s = lists.get_as_series(i).ok_or_else(
                || polars_err!(ComputeError: "history column `samples` holds a null"),
            )?;
            Ok(s.f64()?.iter().flatten().collect())
        })
        .collect::<PolarsResult<_>>()?;
    Ok((0..df.height())
        .map(|i| HistoryRow {
            run_id: run_id[i].clone(),
            started: started[i].clone(),
            suite: suite[i].clone(),
            fingerprint: fingerprint[i].clone(),
            gpu: gpu[i].clone(),
            driver: driver[i].clone(),
            cuda: cuda[i].clone(),
            cache: cache[i].clone(),
            clock_policy: clock_policy[i].clone(),
            mock: mock[i],
            commit: commit[i].clone(),
            dirty: dirty[i],
            gpu_lab_version: version[i].clone(),
            job_id: job_id[i].clone(),
            variant: variant[i].clone(),
            group: group[i].clone(),
            label: label[i].clone(),
            measure: measures[i],
            median: median[i],
            ci_low: low[i],
            ci_high: high[i],
            samples: samples[i].clone(),
        })
        .collect())
}
