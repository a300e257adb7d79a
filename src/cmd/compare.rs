//! `gpu-lab compare`: stored runs side by side, also across GPUs, without verdicts; two in detail, any number through the runs' polars frame.

use std::path::PathBuf;

use anyhow::bail;

use super::check::{definitions, load_run, render};
use crate::cli::CompareFormat;
use crate::compare::{self, Settings, clocks::Normalize};
use crate::config::Config;
use crate::exit;
use crate::frame;
use crate::records::RunData;
use crate::report;

pub fn compare(config: &Config, dirs: &[PathBuf], format: CompareFormat) -> anyhow::Result<i32> {
    let runs: Vec<RunData> = dirs
        .iter()
        .map(|d| load_run(d))
        .collect::<anyhow::Result<_>>()?;
    // The frame joins on the label: a run given twice gets a second, distinct one.
    let mut labels: Vec<String> = Vec::new();
    for d in dirs {
        let base = d.display().to_string();
        let mut label = base.clone();
        for n in 2.. {
            if !labels.contains(&label) {
                break;
            }
            label = format!("{base} ({n})");
        }
        labels.push(label);
    }
    let text = match (format, runs.as_slice()) {
        (CompareFormat::Md | CompareFormat::Json, [base, new]) => {
            // As measured: no clock normalisation, plain times; % of copy shows the cross-GPU view beside them.
            let s = Settings {
                normalize: Normalize::None,
                ..Settings::default()
            };
            let c = compare::compare(
                base,
                &labels[0],
                new,
                &labels[1],
                &definitions(config, base, new)?,
                &s,
                false,
            );
            render(
                &c,
                if format == CompareFormat::Md {
                    compare::Format::Md
                } else {
                    compare::Format::Json
                },
            )?
            .0
        }
        (CompareFormat::Svg, _) => {
            let pairs: Vec<(&str, &RunData)> =
                labels.iter().map(String::as_str).zip(&runs).collect();
            report::runs_svg::render(&pairs)?
        }
        (CompareFormat::Json, _) => bail!(
            "--format json compares two runs; {} were given\n  fix: use --format md or csv for more runs",
            runs.len()
        ),
        (CompareFormat::Md | CompareFormat::Csv, _) => {
            let pairs: Vec<(&str, &RunData)> =
                labels.iter().map(String::as_str).zip(&runs).collect();
            let df = frame::results(&pairs)?;
            if format == CompareFormat::Csv {
                frame::to_csv(&df)?
            } else {
                let label_refs: Vec<&str> = labels.iter().map(String::as_str).collect();
                report::frame::side_by_side_markdown(
                    &df,
                    &label_refs,
                    &runs.iter().collect::<Vec<_>>(),
                )?
            }
        }
    };
    print!("{text}");
    Ok(exit::OK)
}
