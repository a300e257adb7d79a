//! The `tma` and `cluster` lessons (issue 30 parts 3-4): every swizzle mode on the transpose with its box matched to the span, and the reduction and histogram at every cluster size, as the manifests expand them.

use gpu_lab::suite::tensor_map::Swizzle;
use gpu_lab::suite::{self, CorrectnessSpec};

use crate::common::kernels_dir;

#[test]
fn the_tma_lesson_has_every_swizzle_mode_with_its_box_matched_to_the_span() {
    let s = suite::load(&kernels_dir().join("tma/suite.toml")).unwrap();
    let ladder = [
        ("tma_transpose_swizzle_none", Swizzle::None, 32, 0),
        ("tma_transpose_swizzle_32B", Swizzle::B32, 8, 32),
        ("tma_transpose_swizzle_64B", Swizzle::B64, 16, 64),
        ("tma_transpose_swizzle_128B", Swizzle::B128, 32, 128),
    ];
    for (variant, swizzle, width, span) in ladder {
        let jobs: Vec<_> = s.jobs.iter().filter(|j| j.key.variant == variant).collect();
        assert_eq!(jobs.len(), 2, "{variant}: one job a shape");
        for j in jobs {
            let l = &j.launches[0];
            // The kernel's template arguments are the box width and the swizzle it undoes.
            assert_eq!(
                l.kernel,
                format!("tma::tma_transpose_vec4<{width}, {span}>")
            );
            assert_eq!(j.tensor_maps.len(), 1, "{}", j.id());
            let t = &j.tensor_maps[0];
            assert_eq!(t.swizzle, swizzle, "{}", j.id());
            assert_eq!(t.box_dims, vec![width, 32], "{}", j.id());
            if span > 0 {
                assert_eq!(
                    t.box_dims[0] * 4,
                    span,
                    "{}: a box row is the swizzle's span",
                    j.id()
                );
            }
            // 32 x 8 threads: one 16-byte chunk of the 32 x 32 tile a thread.
            assert_eq!((l.block[0], l.block[1]), (32, 8), "{}", j.id());
            let (nx, ny) = (j.key.group_params["NX"], j.key.group_params["NY"]);
            assert_eq!(l.grid[0] as i64, (nx + 31) / 32, "{}", j.id());
            assert_eq!(l.grid[1] as i64, (ny + 31) / 32, "{}", j.id());
            assert!(
                matches!(j.correctness, CorrectnessSpec::Transpose { .. }),
                "{}: not transpose-checked",
                j.id()
            );
        }
    }
    let bulk: Vec<_> = s
        .jobs
        .iter()
        .filter(|j| j.key.variant == "bulk_copy")
        .collect();
    assert_eq!(bulk.len(), 2);
    for j in bulk {
        let n = j.key.group_params["NX"] * j.key.group_params["NY"];
        // 16-byte multiples (the bulk copy's rule) and 4096-float chunks covering the array.
        assert_eq!(n % 4, 0, "{}", j.id());
        assert_eq!(
            j.launches[0].grid[0] as i64,
            (n + 4095) / 4096,
            "{}",
            j.id()
        );
        assert!(
            j.tensor_maps.is_empty(),
            "{}: a bulk copy needs no map",
            j.id()
        );
        assert!(
            matches!(j.correctness, CorrectnessSpec::Copy { .. }),
            "{}",
            j.id()
        );
    }
    // The report carries the shared-memory bank conflicts the ladder is about.
    assert_eq!(s.manifest.suite.metric_set.as_deref(), Some("tma"));
}

#[test]
fn the_cluster_lesson_reduces_and_histograms_at_every_cluster_size() {
    let s = suite::load(&kernels_dir().join("cluster/suite.toml")).unwrap();
    for (variant, size) in [
        ("cluster1", 1),
        ("cluster2", 2),
        ("cluster4", 4),
        ("cluster8", 8),
        ("cluster16", 16),
    ] {
        for j in s.jobs.iter().filter(|j| j.key.variant == variant) {
            let l = &j.launches[0];
            assert_eq!(l.cluster, Some([size, 1, 1]), "{}", j.id());
            let CorrectnessSpec::Sum { count, .. } = j.correctness else {
                panic!("{}: not sum-checked", j.id())
            };
            // One partial a cluster: the check adds exactly as many as there are clusters.
            assert_eq!(count, (l.grid[0] / size) as u64, "{}", j.id());
        }
    }
    let sizes: Vec<i64> = s
        .jobs
        .iter()
        .filter(|j| j.key.variant == "hist_cluster" && j.key.group_params["N"] == 67108864)
        .map(|j| j.key.variant_params["CLUSTER"])
        .collect();
    assert_eq!(sizes, [1, 2, 4, 8, 16]);
    let histograms = ["hist_global", "hist_block", "hist_cluster"];
    let mut seen = 0;
    for j in s
        .jobs
        .iter()
        .filter(|j| histograms.contains(&j.key.variant.as_str()))
    {
        seen += 1;
        let nbins = 1024;
        let CorrectnessSpec::Histogram { bins, .. } = j.correctness else {
            panic!("{}: not histogram-checked", j.id())
        };
        assert_eq!(bins, nbins, "{}", j.id());
        // The bins are zeroed by a launch of the job's own, before the atomics add into them.
        assert_eq!(j.launches.len(), 2, "{}", j.id());
        assert_eq!(j.launches[0].kernel, "cl::zero_bins", "{}", j.id());
        let hist = &j.launches[1];
        match j.key.variant.as_str() {
            "hist_block" => assert_eq!(hist.shared_bytes, 4 * nbins as u32, "{}", j.id()),
            "hist_cluster" => {
                let size = j.key.variant_params["CLUSTER"] as u32;
                assert_eq!(hist.cluster, Some([size, 1, 1]), "{}", j.id());
                assert_eq!(
                    nbins as u32 % size,
                    0,
                    "{}: every block owns a whole slice",
                    j.id()
                );
                assert_eq!(hist.shared_bytes, 4 * nbins as u32 / size, "{}", j.id());
                assert_eq!(hist.grid[0] % size, 0, "{}", j.id());
            }
            _ => assert_eq!(hist.shared_bytes, 0, "{}", j.id()),
        }
    }
    assert_eq!(
        seen,
        2 * 7,
        "hist_global, hist_block and 5 cluster sizes at both sizes"
    );
}
