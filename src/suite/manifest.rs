//! The `suite.toml` format as serde types: what a user writes to describe kernels, buffers, sweeps and checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::verify::{ElemType, Init};

/// One value of a sweep axis: a plain number binds the axis name, a table binds each of its keys.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum AxisValue {
    Number(i64),
    Table(BTreeMap<String, i64>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub suite: SuiteHeader,
    #[serde(default)]
    pub axes: BTreeMap<String, Vec<AxisValue>>,
    #[serde(default)]
    pub params: BTreeMap<String, i64>,
    #[serde(default)]
    pub buffers: Vec<BufferDecl>,
    #[serde(default)]
    pub variants: Vec<VariantDecl>,
    /// Tiled views of buffers for TMA, passed to kernels by name in `args`.
    #[serde(default)]
    pub tensor_maps: Vec<super::tensor_map::TensorMapDecl>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteHeader {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Default CUDA source file, relative to the manifest.
    pub source: Option<String>,
    /// Default metric set collected by `profile`.
    pub metric_set: Option<String>,
    /// What each job is compared with: `copy` (the default), `cublas` (cuBLAS at the job's
    /// `matmul` check shape) or `variant:NAME` (that variant of the suite, in the same group).
    pub bound: Option<String>,
    /// The L2 state its jobs and bounds are timed in: `warm` (the default) or `cold`.
    pub cache: Option<crate::records::CacheState>,
    /// Sources may lie outside the suite's directory (`../other-suite/k.cu`); refused otherwise.
    #[serde(default)]
    pub allow_outside: bool,
    /// Default correctness check for every variant.
    pub check: Option<CorrectnessDecl>,
    /// Bytes a variant must move, for effective bandwidth (an expression).
    pub bytes: Option<String>,
    /// Arithmetic operations, for GFLOP/s (an expression).
    pub flops: Option<String>,
    /// The math the flops run on (`fp32`, `fp64`, `bf16-tensor`, …): the roof they are judged against.
    pub math: Option<String>,
    /// Compiler options added to every variant.
    #[serde(default)]
    pub options: Vec<String>,
    /// `nvrtc` (the default) or `nvcc`, for every variant that does not choose.
    pub compiler: Option<super::job::Compiler>,
    /// The project's header directories, relative to the manifest (inside the suite's directory
    /// unless `allow_outside`); the CUDA toolkit's own are always searched.
    #[serde(default)]
    pub include_dirs: Vec<String>,
    /// Relocatable device code linked with the CUDA device runtime (`libcudadevrt.a`), for kernels
    /// that launch kernels (dynamic parallelism); every variant that does not choose.
    pub rdc: Option<bool>,
    /// `generic` (the default: `sm_XY`) or `specific` (`sm_XYa`: wgmma, setmaxnreg), for every
    /// variant that does not choose.
    pub arch: Option<super::job::ArchTarget>,
    /// The device runtime's buffer of launches not yet started (`cudaLimitDevRuntimePendingLaunchCount`,
    /// default 2048), an expression; only with `rdc = true`.
    pub pending_launches: Option<String>,
    /// `check`'s noise threshold for its jobs, in percent, where it must be more than the command
    /// line's: for jobs that vary more than that between runs (pageable and managed copies).
    pub noise_threshold: Option<NoiseThresholdDecl>,
    /// Where `--sanitize` runs each variant: `{ shape = { N = 4096 } }` (else at its cheapest job).
    pub sanitize: Option<SanitizeDecl>,
}

/// `sanitize = { shape = { N = 4096 } }`: the sweep point `--sanitize` runs a variant at, one value
/// for every name the suite's axes bind (it need not be a point the sweep times).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SanitizeDecl {
    pub shape: BTreeMap<String, i64>,
}

impl VariantDecl {
    /// The launches in order: `launches` when given, else the variant's own single launch.
    pub fn launch_decls(&self) -> Vec<LaunchDecl> {
        if !self.launches.is_empty() {
            return self.launches.clone();
        }
        vec![LaunchDecl {
            kernel: self.kernel.clone(),
            block: self.block.clone(),
            grid: self.grid.clone(),
            args: self.args.clone(),
            shared_bytes: self.shared_bytes.clone(),
            cluster: self.cluster.clone(),
            pdl: false,
        }]
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferDecl {
    pub name: String,
    #[serde(rename = "type")]
    pub elem: ElemType,
    /// Element count (an expression).
    pub len: String,
    /// How it starts: `random`, `random_int`, `iota`, `zero` or `poison`.
    pub init: Option<Init>,
    /// Instead of `init`: the initial values of this earlier buffer, converted to this buffer's
    /// type (an f16 input holding an f32 input's numbers, rounded).
    pub from: Option<String>,
    /// Where it lives: `device` (the default), `pageable`, `pinned`, `mapped` (zero-copy) or
    /// `managed` (unified memory). Host kinds are for variants written as `steps`.
    pub memory: Option<super::job::Memory>,
    /// Unified-memory advice for a managed buffer: `read_mostly`, `preferred_location_device`,
    /// `preferred_location_host`, `accessed_by_device`.
    #[serde(default)]
    pub advise: Vec<super::job::Advice>,
}

/// A check's accepted error: a relative error (`1e-3`), or a multiple of the output type's
/// epsilon (`"8 eps"`: 8 × 2^-10 for f16).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum ToleranceDecl {
    Relative(f64),
    Text(String),
}

/// A noise threshold in percent: one number for every job, or an expression over each job's axes
/// and params (`if(CHILDREN == 32, 30, 0)`), where 0 leaves that job to the command line's.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(
    untagged,
    expecting = "a percentage (noise_threshold = 20) or an expression string over the job's axes and params (\"if(N == 4096, 30, 0)\")"
)]
pub enum NoiseThresholdDecl {
    Percent(f64),
    Expr(String),
}

impl Default for ToleranceDecl {
    fn default() -> Self {
        ToleranceDecl::Relative(0.0)
    }
}

impl ToleranceDecl {
    /// The relative error it allows for outputs of type `elem`.
    pub fn relative(&self, elem: ElemType) -> Result<f64, String> {
        let value = match self {
            ToleranceDecl::Relative(x) => *x,
            ToleranceDecl::Text(t) => {
                let words: Vec<&str> = t.split_whitespace().collect();
                match words.as_slice() {
                    [n, unit] if matches!(*unit, "eps" | "epsilon" | "ulp") => {
                        let n: f64 = n
                            .parse()
                            .map_err(|_| format!("tolerance `{t}`: `{n}` is not a number"))?;
                        if !elem.is_float() {
                            return Err(format!(
                                "tolerance `{t}` counts epsilons of the output type, and {} is an integer type (compared exactly)",
                                elem.name()
                            ));
                        }
                        n * elem.epsilon()
                    }
                    [n] => n
                        .parse()
                        .map_err(|_| format!("tolerance `{t}` is neither a number nor `N eps`"))?,
                    _ => return Err(format!("tolerance `{t}` is neither a number nor `N eps`")),
                }
            }
        };
        if !(value.is_finite() && value >= 0.0) {
            return Err(format!("tolerance {value} must be a finite number >= 0"));
        }
        Ok(value)
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CorrectnessDecl {
    /// Built-in CPU reference: `copy`, `transpose`, `sum`, `matmul`, `scan`, `compact`, `sort`,
    /// `histogram`, `function`, `add`, `softmax`, `layernorm`, `rmsnorm`, or `none`. Kept as written: it is parsed into a
    /// `CheckOp` where the check is resolved, so an unknown op is reported with its line.
    pub op: Option<String>,
    /// Instead of a built-in op: the output must equal this variant's output on the same input.
    pub same_as: Option<String>,
    pub input: Option<String>,
    pub output: Option<String>,
    /// For `transpose`: the input's rows and columns (expressions); the output is cols x rows.
    /// For `softmax`, `layernorm` and `rmsnorm`: the matrix's rows and columns (row-major).
    pub rows: Option<String>,
    pub cols: Option<String>,
    /// For `copy`: `out[output_offset + i] == in[input_offset + i * input_stride]` (expressions; 0, 1, 0 by default).
    pub input_offset: Option<String>,
    pub input_stride: Option<String>,
    pub output_offset: Option<String>,
    /// For `sum`: how many elements of the output hold partial results (an expression).
    pub count: Option<String>,
    /// For `matmul`: `output = alpha * op(a) * op(b) + beta * output`, row-major, op(a) m x k,
    /// op(b) k x n (expressions), `trans_a`/`trans_b` when a is stored k x m / b is stored n x k.
    /// For `add`: `output[i] = a[i] + b[i]` for every element of the output.
    pub a: Option<String>,
    pub b: Option<String>,
    pub m: Option<String>,
    pub n: Option<String>,
    pub k: Option<String>,
    pub alpha: Option<String>,
    /// For `matmul`: the scalar beta (an expression). For `layernorm`: the buffer of the
    /// per-column shift beta (optional).
    pub beta: Option<String>,
    /// For `layernorm` and `rmsnorm`: the buffer of the per-column scale gamma (optional).
    pub gamma: Option<String>,
    /// For `layernorm` and `rmsnorm`: the epsilon added to the variance (an expression).
    pub eps: Option<String>,
    /// For `softmax`: y = softmax(scale * x) (an expression, > 0; 1 when absent).
    pub scale: Option<String>,
    #[serde(default)]
    pub trans_a: bool,
    #[serde(default)]
    pub trans_b: bool,
    /// For `scan`: exclusive prefix sums (`out[0] = 0`) instead of inclusive.
    #[serde(default)]
    pub exclusive: bool,
    /// For `compact`: which elements are kept: `positive`, `nonzero` or `even`.
    pub keep: Option<String>,
    /// For `histogram`: the number of bins (an expression); element x counts in bin x mod bins.
    pub bins: Option<String>,
    /// For `function`: `sin`, `cos`, `exp`, `log`, `sqrt`, `tanh` or `pow` (with `exponent`).
    #[serde(rename = "fn")]
    pub function: Option<String>,
    /// For `function` with `fn = "pow"`: the exponent (an expression).
    pub exponent: Option<String>,
    /// For `function`: the largest error accepted, in units in the last place of the output type.
    pub max_ulp: Option<f64>,
    /// For `same_as`: the reference variant's output buffer, when it is not `output` (an f32
    /// variant writing `y` is the reference of an f16 one writing `y_half`).
    pub reference_output: Option<String>,
    /// Largest accepted relative error for float outputs (0 = bit-exact), or `"N eps"`.
    #[serde(default)]
    pub tolerance: ToleranceDecl,
}

/// One kernel launch of a variant: `[[variants.launches]]`, or the variant's own fields for one launch.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LaunchDecl {
    pub kernel: Option<String>,
    /// Threads per block, 1 to 3 expressions (x, y, z).
    pub block: Option<Vec<String>>,
    /// Blocks per grid, 1 to 3 expressions.
    pub grid: Option<Vec<String>>,
    /// Buffer names, or scalar expressions optionally typed `u32: expr` (default i32).
    pub args: Option<Vec<String>>,
    /// Dynamic shared memory bytes (an expression).
    pub shared_bytes: Option<String>,
    /// Blocks per thread-block cluster, 1 to 3 expressions (x, y, z): launched with
    /// `cuLaunchKernelEx` and a cluster dimension.
    pub cluster: Option<Vec<String>>,
    /// Programmatic dependent launch: this launch may start while the previous launch of the
    /// variant finishes (`cudaGridDependencySynchronize` in the kernel waits for it). Not on the first launch.
    #[serde(default)]
    pub pdl: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantDecl {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub source: Option<String>,
    pub kernel: Option<String>,
    pub block: Option<Vec<String>>,
    pub grid: Option<Vec<String>>,
    pub args: Option<Vec<String>>,
    pub shared_bytes: Option<String>,
    /// Blocks per cluster of its single launch (`cluster = ["16", "1", "1"]`).
    pub cluster: Option<Vec<String>>,
    /// Several launches in order; replaces the single-launch fields.
    #[serde(default)]
    pub launches: Vec<LaunchDecl>,
    /// A host program instead of launches: copies, kernels, memsets, prefetches, events and
    /// syncs, each on a stream, in issue order (docs/suite-format.md, steps).
    #[serde(default)]
    pub steps: Vec<StepDecl>,
    /// The streams its steps use besides the NULL stream.
    #[serde(default)]
    pub streams: Vec<StreamDecl>,
    /// Fixed parameters of this variant.
    #[serde(default)]
    pub params: BTreeMap<String, i64>,
    /// Sweep axes of this variant, combined with the suite's.
    #[serde(default)]
    pub axes: BTreeMap<String, Vec<AxisValue>>,
    /// Preprocessor defines: name -> expression (`-D NAME=value`).
    #[serde(default)]
    pub defines: BTreeMap<String, String>,
    /// Extra compiler options (`-G`, `--use_fast_math`; nvcc-only ones such as `-Xptxas -dlcm=cg` with compiler = "nvcc").
    #[serde(default)]
    pub options: Vec<String>,
    /// `nvrtc` or `nvcc` for this variant.
    pub compiler: Option<super::job::Compiler>,
    /// More header directories for this variant.
    #[serde(default)]
    pub include_dirs: Vec<String>,
    /// `rdc` for this variant (relocatable device code and the device runtime).
    pub rdc: Option<bool>,
    /// `arch` for this variant (`generic` or `specific`).
    pub arch: Option<super::job::ArchTarget>,
    /// `pending_launches` for this variant.
    pub pending_launches: Option<String>,
    /// `noise_threshold` for this variant (percent).
    pub noise_threshold: Option<NoiseThresholdDecl>,
    pub check: Option<CorrectnessDecl>,
    pub bytes: Option<String>,
    pub flops: Option<String>,
    /// `math` for this variant.
    pub math: Option<String>,
    /// `bound` for this variant: overrides the suite's.
    pub bound: Option<String>,
    /// `sanitize` for this variant: overrides the suite's.
    pub sanitize: Option<SanitizeDecl>,
}

/// A stream of a host-program variant, or with `count` a family of them (`work[0]` .. `work[count-1]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamDecl {
    pub name: String,
    /// How many (an expression); a family's streams are named `name[i]`.
    pub count: Option<String>,
    /// `CU_STREAM_NON_BLOCKING`: it does not wait for (nor block) the NULL stream.
    #[serde(default)]
    pub non_blocking: bool,
}

/// One step of a host-program variant (`[[variants.steps]]`): exactly one of `copy`, `kernel`,
/// `memset`, `prefetch`, `record`, `wait`, `sync`, or `each` (steps repeated per chunk).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct StepDecl {
    /// `h2d`, `d2h` or `d2d`: a copy `from` one buffer (or `buf[offset]`) `to` another.
    pub copy: Option<String>,
    pub from: Option<String>,
    /// A copy's target buffer; a prefetch's destination (`device` or `host`).
    pub to: Option<String>,
    /// Elements copied, set or prefetched (an expression; default: from the offset to the end).
    pub count: Option<String>,
    /// A copy with `cuMemcpyAsync` on the step's stream (the host goes on); else `cuMemcpy`.
    #[serde(rename = "async", default)]
    pub asynchronous: bool,
    /// A kernel launch, with `grid`, `block`, `args` and `shared_bytes` as in a launch.
    pub kernel: Option<String>,
    pub grid: Option<Vec<String>>,
    pub block: Option<Vec<String>>,
    pub args: Option<Vec<String>>,
    pub shared_bytes: Option<String>,
    /// A kernel step's blocks per cluster, as in a launch.
    pub cluster: Option<Vec<String>>,
    /// Sets every byte of a buffer (or `buf[offset]` with `count`) to `value`.
    pub memset: Option<String>,
    pub value: Option<u8>,
    /// Moves a managed buffer's pages `to` the device or the host ahead of use.
    pub prefetch: Option<String>,
    /// Records this event (`done`, or `done[chunk]`) on the step's stream.
    pub record: Option<String>,
    /// The step's stream waits for this event (recorded by an earlier step).
    pub wait: Option<String>,
    /// The host waits: `device`, `stream` (the step's stream) or `event` (with `event`).
    pub sync: Option<String>,
    pub event: Option<String>,
    /// The stream it is issued on: a declared stream, `name[index]` of a family, or `null` (the default).
    pub stream: Option<String>,
    /// Repeat the step (or the group in `each`) for chunk = 0 .. chunks-1; expressions see
    /// `chunk` and `chunks`.
    pub chunks: Option<String>,
    /// With `chunks`: the steps done for each chunk in turn (chunk 0's, then chunk 1's, ...).
    #[serde(default)]
    pub each: Vec<StepDecl>,
    /// What reports and timelines call it (default: the action and its buffer, `h2d a`).
    pub label: Option<String>,
}
