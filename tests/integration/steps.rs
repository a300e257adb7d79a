//! Host-program variants (`[[variants.steps]]`) at load time: a chunked program expands to its steps in order, on their streams, at their offsets, with its events resolved; each mistake is named with its line and fix.

use std::path::{Path, PathBuf};

use gpu_lab::suite::{
    self, Action, ArgSpec, CorrectnessSpec, Direction, Region, StepProgram, SyncTarget,
};

const CU: &str =
    "extern \"C\" __global__ void add(const float* a, const float* b, float* c, int n) {}\n";

/// Every test's suite header and buffers: N = 1024 floats cut into C = 4 chunks, one buffer of
/// each memory kind. Buffer indices: h_a 0, p_a 1, p_b 2, p_c 3, d_a 4, d_b 5, d_c 6, d_i 7,
/// m_a 8, z_a 9.
const HEAD: &str = r#"
[suite]
name = "prog"
source = "k.cu"

[params]
N = 1024
C = 4

[[buffers]]
name = "h_a"
type = "f32"
len = "N"
init = "random"
memory = "pageable"

[[buffers]]
name = "p_a"
type = "f32"
len = "N"
init = "random"
memory = "pinned"

[[buffers]]
name = "p_b"
type = "f32"
len = "N"
init = "random"
memory = "pinned"

[[buffers]]
name = "p_c"
type = "f32"
len = "N"
init = "poison"
memory = "pinned"

[[buffers]]
name = "d_a"
type = "f32"
len = "N"
init = "poison"

[[buffers]]
name = "d_b"
type = "f32"
len = "N"
init = "poison"

[[buffers]]
name = "d_c"
type = "f32"
len = "N"
init = "poison"

[[buffers]]
name = "d_i"
type = "i32"
len = "N"
init = "poison"

[[buffers]]
name = "m_a"
type = "f32"
len = "N"
init = "random"
memory = "managed"

[[buffers]]
name = "z_a"
type = "f32"
len = "N"
init = "random"
memory = "mapped"
"#;

fn write(dir: &Path, toml: &str) -> PathBuf {
    let d = dir.join("prog");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("k.cu"), CU).unwrap();
    std::fs::write(d.join("suite.toml"), toml).unwrap();
    d.join("suite.toml")
}

fn load(variant: &str) -> suite::Suite {
    let d = tempfile::tempdir().unwrap();
    let toml = format!("{HEAD}\n{variant}");
    suite::load(&write(d.path(), &toml)).unwrap_or_else(|e| panic!("{e}\n{variant}"))
}

/// The 1-based line of the only line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "`{needle}` must be on exactly one line, is on {lines:?}"
    );
    lines[0]
}

/// Loads HEAD + `variant`, which must fail on the line holding `at` (a text unique in the
/// manifest), with a message containing `says` and a fix containing `fix`.
fn assert_refused(variant: &str, at: &str, says: &str, fix: &str) {
    let d = tempfile::tempdir().unwrap();
    let toml = format!("{HEAD}\n{variant}");
    let e = suite::load(&write(d.path(), &toml))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    let line = line_of(&toml, at);
    assert!(
        e.contains(&format!("suite.toml:{line}: ")),
        "wanted line {line} (`{at}`): {e}"
    );
    assert!(e.contains(says), "wanted `{says}`: {e}");
    let (_, fix_text) = e
        .split_once("\n  fix: ")
        .unwrap_or_else(|| panic!("no fix: {e}"));
    assert!(fix_text.contains(fix), "wanted a fix with `{fix}`: {e}");
}

/// A chunked program like docs/suite-format.md's worked example: C chunks, each copied in, added
/// and copied out on stream s[chunk % K], depth first; each chunk records `done[chunk]`; s[0] then
/// waits for the last chunk and the host for its event.
const DEPTH_FIRST: &str = r#"
[[variants]]
name = "overlap"
check = { op = "add", a = "p_a", b = "p_b", output = "p_c" }
params = { K = 2 }
streams = [{ name = "s", count = "K", non_blocking = true }]

[[variants.steps]]
chunks = "C"
each = [
    { copy = "h2d", from = "p_a[chunk * (N / C)]", to = "d_a[chunk * (N / C)]", count = "N / C", async = true, stream = "s[chunk % K]" },
    { copy = "h2d", from = "p_b[chunk * (N / C)]", to = "d_b[chunk * (N / C)]", count = "N / C", async = true, stream = "s[chunk % K]" },
    { kernel = "add", grid = ["ceil_div(N / C, 128)"], block = ["128"], args = ["d_a[chunk * (N / C)]", "d_b[chunk * (N / C)]", "d_c[chunk * (N / C)]", "N / C"], stream = "s[chunk % K]" },
    { copy = "d2h", from = "d_c[chunk * (N / C)]", to = "p_c[chunk * (N / C)]", count = "N / C", async = true, stream = "s[chunk % K]" },
    { record = "done[chunk]", stream = "s[chunk % K]" },
]

[[variants.steps]]
wait = "done[C - 1]"
stream = "s[0]"
label = "s[0] waits for the last chunk"

[[variants.steps]]
sync = "event"
event = "done[C - 1]"
"#;

fn program(s: &suite::Suite) -> &StepProgram {
    s.jobs[0].steps.as_ref().expect("a host program")
}

#[test]
fn a_depth_first_group_expands_chunk_by_chunk_with_its_offsets_streams_and_events() {
    let s = load(DEPTH_FIRST);
    assert_eq!(s.jobs.len(), 1);
    let j = &s.jobs[0];
    let p = program(&s);
    assert_eq!(
        p.streams
            .iter()
            .map(|s| (s.name.as_str(), s.non_blocking))
            .collect::<Vec<_>>(),
        [("s[0]", true), ("s[1]", true)]
    );
    assert_eq!(p.events, ["done[0]", "done[1]", "done[2]", "done[3]"]);
    assert_eq!(p.steps.len(), 4 * 5 + 2);

    // Chunk 0's five steps, then chunk 1's, ...: depth first.
    let labels: Vec<&str> = p.steps.iter().map(|s| s.label.as_str()).collect();
    let mut want: Vec<String> = (0..4)
        .flat_map(|c| {
            [
                format!("h2d p_a #{c}"),
                format!("h2d p_b #{c}"),
                format!("kernel add #{c}"),
                format!("d2h d_c #{c}"),
                format!("record done[{c}] #{c}"),
            ]
        })
        .collect();
    want.extend([
        "s[0] waits for the last chunk".to_string(),
        "sync event".to_string(),
    ]);
    assert_eq!(labels, want);
    let streams: Vec<String> = p.steps.iter().map(|s| p.stream_name(s.stream)).collect();
    let mut want: Vec<String> = (0..4)
        .flat_map(|c| std::iter::repeat_n(format!("s[{}]", c % 2), 5))
        .collect();
    want.extend(["s[0]".to_string(), "NULL".to_string()]);
    assert_eq!(streams, want);
    assert_eq!(
        p.steps.iter().map(|s| s.chunk).collect::<Vec<_>>(),
        (0..4u64)
            .flat_map(|c| [Some(c); 5])
            .chain([None, None])
            .collect::<Vec<_>>()
    );

    // Each chunk's copies move its quarter, at its offset in both buffers.
    for c in 0..4u64 {
        let steps = &p.steps[c as usize * 5..][..5];
        let region = |buffer: usize| Region {
            buffer,
            offset: c * 256,
            len: 256,
        };
        assert_eq!(
            steps[0].action,
            Action::Copy {
                direction: Direction::H2d,
                from: region(1),
                to: region(4),
                asynchronous: true
            }
        );
        assert_eq!(
            steps[1].action,
            Action::Copy {
                direction: Direction::H2d,
                from: region(2),
                to: region(5),
                asynchronous: true
            }
        );
        assert_eq!(steps[2].action, Action::Kernel { launch: c as usize });
        assert_eq!(
            steps[3].action,
            Action::Copy {
                direction: Direction::D2h,
                from: region(6),
                to: region(3),
                asynchronous: true
            }
        );
        assert_eq!(steps[4].action, Action::Record { event: c as usize });
        // The chunk's kernel gets pointers into the chunk and its length.
        let l = &j.launches[c as usize];
        assert_eq!(
            l.args,
            [
                ArgSpec::BufferAt(4, c * 256),
                ArgSpec::BufferAt(5, c * 256),
                ArgSpec::BufferAt(6, c * 256),
                ArgSpec::I32(256)
            ]
        );
        assert_eq!((l.grid, l.block), ([2, 1, 1], [128, 1, 1]));
    }
    assert_eq!(j.launches.len(), 4);
    // The wait and the host's sync name the last chunk's event.
    assert_eq!(p.steps[20].action, Action::Wait { event: 3 });
    assert_eq!(
        p.steps[21].action,
        Action::Sync {
            target: SyncTarget::Event(3)
        }
    );
    assert_eq!(
        j.correctness,
        CorrectnessSpec::Add {
            a: 1,
            b: 2,
            output: 3,
            tolerance: 0.0
        }
    );
    assert!(j.crosses_host_link());
    // Copies count their bytes for the timeline: a quarter of N floats each.
    assert_eq!(p.steps[0].action.bytes(&j.buffers), 256 * 4);
}

#[test]
fn chunks_on_each_step_issue_breadth_first() {
    let s = load(
        r#"
[[variants]]
name = "breadth"
check = { op = "add", a = "p_a", b = "p_b", output = "p_c" }
streams = [{ name = "s", count = "C" }]
steps = [
    { chunks = "C", copy = "h2d", from = "p_a[chunk * (N / C)]", to = "d_a[chunk * (N / C)]", count = "N / C", async = true, stream = "s[chunk]" },
    { chunks = "C", copy = "h2d", from = "p_b[chunk * (N / C)]", to = "d_b[chunk * (N / C)]", count = "N / C", async = true, stream = "s[chunk]" },
    { chunks = "C", kernel = "add", grid = ["2"], block = ["128"], args = ["d_a[chunk * (N / C)]", "d_b[chunk * (N / C)]", "d_c[chunk * (N / C)]", "N / C"], stream = "s[chunk]" },
    { chunks = "C", copy = "d2h", from = "d_c[chunk * (N / C)]", to = "p_c[chunk * (N / C)]", count = "N / C", async = true, stream = "s[chunk]" },
    { sync = "device" },
]
"#,
    );
    let p = program(&s);
    // Every chunk's first step, then every chunk's second, ...
    let order: Vec<(&str, Option<u64>, String)> = p
        .steps
        .iter()
        .map(|s| {
            (
                s.label.split(" #").next().unwrap(),
                s.chunk,
                p.stream_name(s.stream),
            )
        })
        .collect();
    let mut want = Vec::new();
    for what in ["h2d p_a", "h2d p_b", "kernel add", "d2h d_c"] {
        for c in 0..4u64 {
            want.push((what, Some(c), format!("s[{c}]")));
        }
    }
    want.push(("sync device", None, "NULL".to_string()));
    assert_eq!(order, want);
    assert!(
        p.streams.iter().all(|s| !s.non_blocking),
        "streams block on the NULL stream unless they say otherwise"
    );
}

#[test]
fn a_d2h_copy_into_device_memory_is_refused_on_its_to_line() {
    assert_refused(
        "[[variants]]\nname = \"v\"\n\n[[variants.steps]]\ncopy = \"d2h\"\nfrom = \"d_c\"\nto = \"d_a\"\n",
        "to = \"d_a\"",
        "variant `v`: a d2h copy goes device to host, and its `to` buffer `d_a` is device memory",
        "use a host buffer there",
    );
}

#[test]
fn a_copy_between_types_is_refused() {
    assert_refused(
        "[[variants]]\nname = \"v\"\nsteps = [\n    { copy = \"h2d\", from = \"p_a\", to = \"d_i\" },\n]\n",
        "to = \"d_i\"",
        "the copy goes from `p_a` (f32) to `d_i` (i32): a copy moves bytes and converts nothing",
        "copy between buffers of one type",
    );
}

#[test]
fn a_stream_the_variant_does_not_declare_is_refused_on_its_stream_line() {
    assert_refused(
        "[[variants]]\nname = \"v\"\nstreams = [{ name = \"s\" }, { name = \"w\", count = \"3\" }]\n\n[[variants.steps]]\nsync = \"stream\"\nstream = \"t\"\n",
        "stream = \"t\"",
        "step names stream `t`, which the variant does not declare (it declares: s, w[0..3])",
        "declare it in the variant's streams",
    );
}

#[test]
fn a_family_of_streams_named_without_an_index_is_refused() {
    assert_refused(
        "[[variants]]\nname = \"v\"\nstreams = [{ name = \"s\", count = \"2\" }]\n\n[[variants.steps]]\ncopy = \"h2d\"\nfrom = \"p_a\"\nto = \"d_a\"\nasync = true\nstream = \"s\"\n",
        "stream = \"s\"",
        "`s` is a family of 2 streams; the step must say which",
        "write `s[i]`, e.g. `s[chunk % 2]`",
    );
    // ...and an index past the family's end.
    assert_refused(
        "[[variants]]\nname = \"v\"\nstreams = [{ name = \"s\", count = \"2\" }]\n\n[[variants.steps]]\nchunks = \"C\"\nsync = \"stream\"\nstream = \"s[chunk]\"\n",
        "stream = \"s[chunk]\"",
        "stream `s[chunk]` is `s[2]`, and `s` has 2 streams",
        "`chunk % K`",
    );
}

#[test]
fn a_wait_on_an_event_no_earlier_step_records_is_refused() {
    assert_refused(
        "[[variants]]\nname = \"v\"\nstreams = [{ name = \"s\" }]\n\n[[variants.steps]]\nwait = \"ready\"\nstream = \"s\"\n\n[[variants.steps]]\nrecord = \"ready\"\n",
        "wait = \"ready\"",
        "waits on event `ready`, which no earlier step records",
        "record it first",
    );
    // Depth first, chunk 0 waits for chunk 1's event, recorded later in issue order.
    assert_refused(
        "[[variants]]\nname = \"v\"\n\n[[variants.steps]]\nchunks = \"2\"\neach = [\n    { wait = \"e[1 - chunk]\" },\n    { record = \"e[chunk]\" },\n]\n",
        "wait = \"e[1 - chunk]\"",
        "waits on event `e[1]`, which no earlier step records",
        "record it first",
    );
}

#[test]
fn a_kernel_given_pageable_memory_is_refused_on_its_args_line() {
    assert_refused(
        "[[variants]]\nname = \"v\"\n\n[[variants.steps]]\nkernel = \"add\"\ngrid = [\"8\"]\nblock = [\"128\"]\nargs = [\"h_a\", \"d_b\", \"d_c\", \"N\"]\n",
        "args = [\"h_a\"",
        "the kernel takes `h_a`, which is pageable host memory, and a kernel cannot reach that",
        "memory = \"mapped\" (zero-copy) or \"managed\"",
    );
    // Mapped and managed memory are what a kernel may take from the host.
    let s = load(
        "[[variants]]\nname = \"v\"\nsteps = [{ kernel = \"add\", grid = [\"8\"], block = [\"128\"], args = [\"z_a\", \"m_a\", \"d_c\", \"N\"] }]\n",
    );
    assert_eq!(
        s.jobs[0].launches[0].args[..2],
        [ArgSpec::Buffer(9), ArgSpec::Buffer(8)]
    );
}

#[test]
fn host_memory_given_to_a_plain_launch_streams_without_steps_and_a_labelled_group_are_refused() {
    // A variant of plain launches is held to the same rule as a kernel step.
    assert_refused(
        "[[variants]]\nname = \"v\"\nkernel = \"add\"\ngrid = [\"8\"]\nblock = [\"128\"]\nargs = [\"d_a\", \"d_b\", \"p_c\", \"N\"]\n",
        "args = [\"d_a\"",
        "the kernel takes `p_c`, which is pinned host memory",
        "copy it to a device buffer first",
    );
    assert_refused(
        "[[variants]]\nname = \"v\"\nstreams = [{ name = \"s\" }]\nkernel = \"add\"\ngrid = [\"8\"]\nblock = [\"128\"]\nargs = [\"d_a\", \"d_b\", \"d_c\", \"N\"]\n",
        "streams = [",
        "declares streams and has no steps to put on them",
        "remove `streams`",
    );
    assert_refused(
        "[[variants]]\nname = \"v\"\n\n[[variants.steps]]\nchunks = \"2\"\nlabel = \"chunk\"\neach = [{ memset = \"d_c\" }]\n",
        "label = \"chunk\"",
        "a group (`each`) has a `label`",
        "put `label` on the steps inside `each`",
    );
}

#[test]
fn a_variant_param_named_chunk_is_refused_where_steps_bind_it() {
    assert_refused(
        "[[variants]]\nname = \"v\"\nparams = { chunks = 2 }\nsteps = [{ memset = \"d_c\" }]\n",
        "params = { chunks",
        "an axis or param is named `chunks`, which repeated steps bind themselves",
        "rename it",
    );
}

#[test]
fn a_prefetch_of_memory_that_is_not_managed_is_refused() {
    assert_refused(
        "[[variants]]\nname = \"v\"\n\n[[variants.steps]]\nprefetch = \"p_a\"\nto = \"device\"\n",
        "prefetch = \"p_a\"",
        "prefetch of `p_a`, which is pinned memory; only managed memory migrates",
        "prefetch a memory = \"managed\" buffer",
    );
}

#[test]
fn a_step_with_two_actions_is_refused_on_its_own_line() {
    assert_refused(
        "[[variants]]\nname = \"v\"\n\n[[variants.steps]]\nsync = \"device\"\n\n[[variants.steps]] # two\ncopy = \"h2d\"\nfrom = \"p_a\"\nto = \"d_a\"\nkernel = \"add\"\n",
        "[[variants.steps]] # two",
        "variant `v`: the step has 2 actions (copy, kernel); a step does one thing",
        "docs/suite-format.md",
    );
}

#[test]
fn a_group_without_chunks_is_refused() {
    assert_refused(
        "[[variants]]\nname = \"v\"\n\n[[variants.steps]]\neach = [{ sync = \"device\" }]\n",
        "[[variants.steps]]",
        "variant `v`: a group (`each`) without `chunks`",
        "give the group `chunks = \"C\"`",
    );
}

/// The fenced block of `lang` that follows `heading` in `text`.
fn block_after<'t>(text: &'t str, heading: &str, lang: &str) -> &'t str {
    let from = text
        .find(heading)
        .unwrap_or_else(|| panic!("no `{heading}`"));
    let open = format!("```{lang}\n");
    let start = from
        + text[from..]
            .find(&open)
            .unwrap_or_else(|| panic!("no {lang} block after `{heading}`"))
        + open.len();
    &text[start..start + text[start..].find("```").unwrap()]
}

#[test]
fn the_worked_example_of_the_guide_loads_and_expands_as_its_table_says() {
    let guide =
        std::fs::read_to_string(crate::common::repo().join("docs/suite-format.md")).unwrap();
    let heading = "### A worked example: the chunked streams program";
    let (cu, toml) = (
        block_after(&guide, heading, "cuda"),
        block_after(&guide, heading, "toml"),
    );
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("overlap");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("overlap.cu"), cu).unwrap();
    std::fs::write(dir.join("suite.toml"), toml).unwrap();
    let s =
        suite::load(&dir.join("suite.toml")).unwrap_or_else(|e| panic!("the guide's example: {e}"));
    assert_eq!(s.jobs.len(), 4);
    let j = s
        .jobs
        .iter()
        .find(|j| j.label() == "depth_first[K=2]")
        .unwrap();
    let p = j.steps.as_ref().unwrap();
    let m: u64 = 33554432 / 8;
    assert_eq!(p.steps.len(), 42);
    let row = |i: usize| (p.steps[i].label.as_str(), p.stream_name(p.steps[i].stream));
    assert_eq!(row(0), ("h2d h_a #0", "s[0]".to_string()));
    assert_eq!(row(2), ("kernel sum_array_overlap #0", "s[0]".to_string()));
    assert_eq!(row(4), ("record done[0] #0", "s[0]".to_string()));
    assert_eq!(row(5), ("h2d h_a #1", "s[1]".to_string()));
    assert_eq!(row(39), ("record done[7] #7", "s[1]".to_string()));
    assert_eq!(row(40), ("sync event", "NULL".to_string()));
    assert_eq!(row(41), ("sync device", "NULL".to_string()));
    assert_eq!(
        p.steps[5].action,
        Action::Copy {
            direction: Direction::H2d,
            from: Region {
                buffer: 0,
                offset: m,
                len: m
            },
            to: Region {
                buffer: 3,
                offset: m,
                len: m
            },
            asynchronous: true
        }
    );
    assert_eq!(
        (j.launches[0].grid[0], j.launches[0].block[0]),
        (32768, 128)
    );
    assert_eq!(
        p.steps[40].action,
        Action::Sync {
            target: SyncTarget::Event(7)
        }
    );
    assert_eq!(j.work.bytes, Some(3.0 * 33554432.0 * 4.0));
}
