//! Tests of the kernel-record reading and the per-sample aggregation on records captured on the GPU (`tests/fixtures/cupti/activity-*.jsonl`, written by the hidden `--activity-dump`).

use super::activity_records::{
    self as records, KIND_CONCURRENT_KERNEL, KernelSpan, SampleWindow, parse_kernel, per_sample_ms,
};

/// One captured job: its first samples' windows and activity ms, then its raw records.
struct Capture {
    windows: Vec<SampleWindow>,
    samples_ms: Vec<f64>,
    records: Vec<(Vec<u8>, String)>,
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn capture(text: &str) -> Capture {
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    let head = lines.next().expect("the windows line");
    let windows = head["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| SampleWindow {
            begin_ns: w[0].as_u64().unwrap(),
            end_ns: w[1].as_u64().unwrap(),
            runs: w[2].as_u64().unwrap() as u32,
        })
        .collect();
    let samples_ms = head["samples_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let records = lines
        .map(|v| {
            let bytes = hex(v["hex"].as_str().unwrap());
            assert_eq!(bytes.len() as u64, v["bytes"].as_u64().unwrap());
            (bytes, v["name"].as_str().unwrap().to_string())
        })
        .collect();
    Capture {
        windows,
        samples_ms,
        records,
    }
}

const CAPTURES: &[(&str, &str)] = &[
    (
        "activity-h100-copy-row-8192.jsonl",
        include_str!("../../tests/fixtures/cupti/activity-h100-copy-row-8192.jsonl"),
    ),
    (
        "activity-h100-copy-row-4000x2000-graph.jsonl",
        include_str!("../../tests/fixtures/cupti/activity-h100-copy-row-4000x2000-graph.jsonl"),
    ),
];

fn spans(c: &Capture) -> Vec<KernelSpan> {
    c.records
        .iter()
        .map(|(bytes, name)| {
            let k = parse_kernel(bytes).unwrap().expect("a kernel record");
            KernelSpan {
                start_ns: k.start_ns,
                end_ns: k.end_ns,
                flush: records::is_flush_kernel(name),
                shared_executed: k.shared_executed,
            }
        })
        .collect()
}

#[test]
fn captured_records_are_cupti_13_concurrent_kernels_of_the_known_size() {
    for (file, text) in CAPTURES {
        let c = capture(text);
        assert!(!c.records.is_empty(), "{file}");
        for (bytes, name) in &c.records {
            let k = parse_kernel(bytes).unwrap().expect("a kernel record");
            assert_eq!(k.kind, KIND_CONCURRENT_KERNEL, "{file}: {name}");
            assert_eq!(bytes.len(), records::KERNEL10_BYTES, "{file}: {name}");
            assert!(k.end_ns > k.start_ns, "{file}: {name}");
            assert_eq!(k.name_ptr, 0, "{file}: the dump zeroes the name pointer");
        }
        assert!(
            c.records.iter().any(|(_, n)| records::is_flush_kernel(n)),
            "{file}: cold samples have the L2 flush"
        );
    }
}

#[test]
fn captured_samples_sum_to_what_the_child_recorded() {
    for (file, text) in CAPTURES {
        let c = capture(text);
        let per = per_sample_ms(&spans(&c), &c.windows);
        let got: Vec<f64> = per.into_iter().flatten().collect();
        assert_eq!(got.len(), c.samples_ms.len(), "{file}");
        for (g, want) in got.iter().zip(&c.samples_ms) {
            assert!(
                (g - want).abs() <= 1e-9 * want.abs().max(1.0),
                "{file}: {g} against {want}"
            );
        }
    }
}

#[test]
fn the_carveout_read_from_captured_records_is_ncus_config_size() {
    // copy_row, 256 threads, 16 registers, no shared memory: ncu's launch__shared_mem_config_size
    // of the same kernel and block is 32768 on the H100 and the H200 (tests/fixtures/h100/
    // transpose-raw-2048x1024.csv, tests/fixtures/h200/transpose-raw-8192x8192.csv).
    for (file, text) in CAPTURES {
        let c = capture(text);
        let copies: Vec<Option<u32>> = c
            .records
            .iter()
            .filter(|(_, name)| name == "copy_row")
            .map(|(bytes, _)| parse_kernel(bytes).unwrap().unwrap().shared_executed)
            .collect();
        assert!(!copies.is_empty(), "{file}");
        assert!(
            copies.iter().all(|&s| s == Some(32768)),
            "{file}: {copies:?}"
        );
    }
    // A record too short to hold the field has none (its other fields still read).
    let (bytes, _) = &capture(CAPTURES[0].1).records[0];
    let short = parse_kernel(&bytes[..records::MIN_RECORD_BYTES])
        .unwrap()
        .unwrap();
    assert_eq!(short.shared_executed, None);
}
