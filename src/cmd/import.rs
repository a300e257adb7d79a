//! `gpu-lab import FILE`: named metrics per kernel, in nvprof's table, from an `.ncu-rep` or an ncu CSV export gpu-lab did not produce; and the table code `gpu-lab ncu` shares.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, bail};

use crate::cli::ImportArgs;
use crate::config::Config;
use crate::exit;
use crate::metrics::{self, MetricDef};
use crate::parse::{self, CsvTable, NcuOutput};
use crate::profiler;
use crate::report::nvprof::{self, DEVICE_NAME};
use crate::store::{FileKind, read_regular};

/// Reads the kernels with only the columns these metrics need (plus the device's name).
pub fn read_kernels(table: &CsvTable, defs: &[MetricDef]) -> anyhow::Result<NcuOutput> {
    let mut wanted: HashSet<&str> = defs
        .iter()
        .flat_map(|d| {
            d.counter_sets()
                .chain(d.not_applicable.iter().map(|r| &r.counters))
                .flat_map(|set| set.values().map(String::as_str))
        })
        .collect();
    wanted.insert(DEVICE_NAME);
    let out = table.kernels(&|name| wanted.contains(name))?;
    // A NaN counter of a launch that ran is an environment failure (exit 1), never a value.
    out.refuse_non_finite()?;
    Ok(out)
}

/// Prints the table to stdout and what could not be shown to stderr; returns the exit code.
pub fn print_summary(
    out: &NcuOutput,
    defs: &[MetricDef],
    format: nvprof::Format,
    skipped: usize,
    source: &str,
) -> anyhow::Result<i32> {
    for e in &out.errors {
        eprintln!("ncu: {e}");
    }
    if out.kernels.is_empty() {
        bail!(
            "{source} holds no profiled kernel\n  fix: check that the program launched kernels (and that --kernel/--launch-count selected some)"
        );
    }
    let summary = nvprof::summarize(&out.kernels, defs)?;
    if summary.missing.len() == defs.len() {
        let needs: Vec<String> = summary
            .missing
            .iter()
            .map(|m| format!("{} needs {}", m.metric, m.counters.join(", ")))
            .collect();
        bail!(
            "none of the requested metrics can be computed from {source}: {}\n  fix: profile with these counters (`gpu-lab ncu --metrics ...` collects them), or ask for metrics the file holds",
            needs.join("; ")
        );
    }
    print!("{}", nvprof::render(&summary, format)?);
    for m in &summary.missing {
        eprintln!(
            "warning: {} not computed: {source} lacks {}",
            m.metric,
            m.counters.join(", ")
        );
    }
    if skipped > 0 {
        eprintln!(
            "note: {skipped} other gpu-lab metrics skipped: their counters are not in {source} (`gpu-lab list metrics` shows what each needs)"
        );
    }
    let faulted = summary.faulted_launches();
    if faulted > 0 {
        eprintln!(
            "warning: {faulted} kernel launch(es) faulted: ncu reported nan values or a (0, 0, 0) grid; their numbers are not measurements"
        );
        return Ok(exit::JOBS_FAILED);
    }
    Ok(exit::OK)
}

/// The largest CSV `import` reads, in bytes (why this size: `FileKind::NCU_CSV`).
pub const MAX_IMPORT_BYTES: u64 = FileKind::NCU_CSV.max_bytes;

fn is_report(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "ncu-rep")
}

/// `gpu-lab import FILE`
pub fn import(config: &Config, args: &ImportArgs) -> anyhow::Result<i32> {
    let file = &args.file;
    if !file.is_file() {
        bail!(
            "{} does not exist or is not a file\n  fix: pass an .ncu-rep report or a CSV that `ncu --csv` printed",
            file.display()
        );
    }
    if !is_report(file)
        && let Ok(meta) = file.metadata()
        && meta.len() > MAX_IMPORT_BYTES
    {
        bail!(
            "{} is {} bytes, more than the {MAX_IMPORT_BYTES} gpu-lab imports\n  fix: export fewer kernels (`ncu -i REPORT --csv --page raw --print-units base --kernel-name ...`), or split the export",
            file.display(),
            meta.len()
        );
    }
    let text = if is_report(file) {
        let ncu = profiler::find(&config.ncu).map_err(|e| {
            anyhow::anyhow!(
                "{e}\n  (an .ncu-rep is read through `ncu -i`; a CSV export of it needs no ncu)"
            )
        })?;
        profiler::export_raw(&ncu, file)?
    } else {
        // Read as any file: the checks above name the usual mistakes, this one closes the gap
        // between them and the read (a FIFO or device put there meanwhile).
        let bytes = read_regular(file, FileKind::NCU_CSV)
            .with_context(|| format!("reading {}", file.display()))?;
        if bytes.contains(&0) {
            bail!(
                "{} is not text: is it an ncu report?\n  fix: give a report the .ncu-rep extension, or export it: `ncu -i REPORT --csv --page raw --print-units base > file.csv`",
                file.display()
            );
        }
        String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    };
    let source = file.display().to_string();
    let table =
        parse::read_ncu_csv(text).with_context(|| format!("reading {source} as ncu CSV output"))?;
    let names = table.metric_names()?;
    let (defs, skipped) =
        metrics::choose_for_file(config.catalog()?, &args.choice.names(), &names)?;
    // Say where a metric comes from another formula than gpu-lab's own.
    for d in &defs {
        if let Some(Some(i)) = d.computable_with(&|c| names.iter().any(|n| n == c)) {
            eprintln!(
                "note: {} computed from {}",
                d.name,
                if d.alternatives[i].note.is_empty() {
                    d.alternatives[i].formula.as_str()
                } else {
                    d.alternatives[i].note.as_str()
                }
            );
        }
    }
    let out = read_kernels(&table, &defs)?;
    print_summary(&out, &defs, args.choice.format, skipped, &source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_chosen_from_what_the_file_holds() {
        let c = metrics::Catalog::builtin().unwrap();
        let available: Vec<String> = ["gpu__time_duration.sum", "Duration", "DRAM Frequency"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (defs, skipped) = metrics::choose_for_file(&c, &[], &available).unwrap();
        assert_eq!(
            defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["duration"]
        );
        assert_eq!(skipped, c.metrics.len() - 1);
        // A details-page display name is taken as it is; an unknown one gets the file's closest names.
        let (defs, _) = metrics::choose_for_file(&c, &["Duration".into()], &available).unwrap();
        assert!(metrics::is_raw_metric(&defs[0]));
        let e = metrics::choose_for_file(&c, &["Durations".into()], &available)
            .unwrap_err()
            .to_string();
        assert!(e.contains("closest to it: Duration"), "{e}");
        assert!(
            metrics::choose_for_file(&c, &[], &["DRAM Frequency".into()])
                .unwrap_err()
                .to_string()
                .contains("fix:")
        );
    }
}
