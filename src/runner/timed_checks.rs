//! The checks a timing loop makes: a verification between samples (`--verify-every K`), and after the samples the verified timed runs (issue 32): tries of four consecutive runs, each timed as a sample's run is and set up against one family of cheats, their outputs checked. The rules that judge them are `records::verified`.

use super::buffers::Buffers;
use super::checking::{compare, expected_output, verify};
use super::device::Gpu;
use super::error::RunError;
use super::loading::Loaded;
use super::sampling::{CheckedBuffers, SampleChecks, TimeOne};
use crate::records::{
    CompileInfo, TRIES, TimedChecks, TimedSetup, VerifiedRun, another_try, timed_wrong,
};
use crate::suite::{BufferSpec, JobSpec};
use crate::verify::{Correctness, HostData, Init};

/// A job's checks during and right after timing, and what they found.
pub(super) struct JobChecks<'a> {
    pub(super) gpu: &'a Gpu,
    pub(super) spec: &'a JobSpec,
    pub(super) loaded: &'a Loaded,
    pub(super) bufs: &'a mut Buffers,
    pub(super) compile: &'a mut Vec<CompileInfo>,
    /// The seed the samples' inputs were drawn from.
    pub(super) seed: u64,
    /// The verdict of the check before the samples, whose output `Buffers::keep_output` kept on
    /// the device (None: not kept).
    pub(super) checked: Option<Correctness>,
    /// `--verify-every K`: the first wrong verification between samples, else the last.
    pub(super) during: Option<Correctness>,
    pub(super) verified_during: u32,
    pub(super) timed: Option<TimedChecks>,
    /// Parts of the timing and how long each took (the verified runs, the activity samples).
    pub(super) took: Vec<(&'static str, f64)>,
}

/// A seed for the inputs of try `attempt` that no other verification of the job draws: far from
/// `seed + i` (each buffer's) and `seed + 1` (the check after timing).
pub(super) fn unseen_seed(seed: u64, attempt: u32) -> u64 {
    seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(u64::from(attempt)))
}

/// Buffers a kernel may rely on finding as they started (inputs, and outputs it accumulates
/// into); only the poisoned ones must be wholly written by a correct kernel, whatever they held.
fn starts_with_data(b: &BufferSpec) -> bool {
    b.init != Init::Poison
}

impl SampleChecks for JobChecks<'_> {
    fn between_samples(&mut self) -> Result<(), RunError> {
        if self.spec.correctness.output().is_none() {
            return Ok(());
        }
        if let Some(c) = verify(self.gpu, self.spec, self.loaded, self.bufs, self.compile)? {
            self.verified_during += 1;
            if self.during.as_ref().is_none_or(|d| d.passed) {
                self.during = Some(c);
            }
        }
        self.bufs.reset(self.gpu, self.spec)
    }

    fn after_samples(&mut self, time_one: &mut TimeOne) -> Result<(), RunError> {
        let Some(output) = self.spec.correctness.output() else {
            return Ok(());
        };
        let mut runs = Vec::new();
        let mut took = VerifiedCosts::default();
        for attempt in 1..=TRIES {
            runs.extend(self.one_try(time_one, output, attempt, &mut took)?);
            if !another_try(&runs) {
                break;
            }
        }
        let wrong = timed_wrong(&runs);
        self.timed = Some(TimedChecks { runs, wrong });
        self.took("verified runs: inputs", took.inputs);
        self.took("verified runs: on the GPU", took.gpu);
        self.took("verified runs: checks", took.checks);
        Ok(())
    }

    fn took(&mut self, part: &'static str, seconds: f64) {
        self.took.push((part, seconds));
    }
}

impl CheckedBuffers for JobChecks<'_> {
    fn buffers(&mut self) -> &mut Buffers {
        self.bufs
    }
}

/// Where the verified timed runs' time went (seconds): drawing the unseen inputs, the runs with
/// their resets and downloads, and the checks of their outputs on the host.
#[derive(Default)]
struct VerifiedCosts {
    inputs: f64,
    gpu: f64,
    checks: f64,
}

impl JobChecks<'_> {
    /// Try `attempt`: four consecutive timed runs (as timed; outputs poisoned; unseen inputs;
    /// those again), their outputs downloaded, then checked (the host work after the four, so
    /// that no run waits behind a long check on a GPU left idle).
    fn one_try(
        &mut self,
        time_one: &mut TimeOne,
        output: usize,
        attempt: u32,
        took: &mut VerifiedCosts,
    ) -> Result<Vec<VerifiedRun>, RunError> {
        let (gpu, spec) = (self.gpu, self.spec);
        let step = std::time::Instant::now();
        // The buffers' initial data is that of the inputs the variant last ran on. The unseen
        // inputs are drawn first: drawing them between runs would leave the GPU idle (its clock
        // lowered) before the third run only.
        let seen = self.seen_seed(attempt);
        let unseen = unseen_seed(self.seed, attempt);
        let seen_initial = self.bufs.reseed_keeping(gpu, spec, unseen);
        let unseen_initial = std::mem::replace(&mut self.bufs.initial, seen_initial);
        took.inputs += step.elapsed().as_secs_f64();
        let step = std::time::Instant::now();
        let mut timed = Vec::new();
        self.bufs.reset_where(gpu, spec, starts_with_data)?;
        // The first try starts on the inputs the check before the samples judged.
        let checked = self.checked.take().filter(|_| attempt == 1);
        let first = match checked {
            Some(verdict) => self.timed_repeat(time_one, output, true, Output::Judged(verdict))?,
            None => self.timed_run(time_one, output)?,
        };
        // An output found the same as the kept one leaves that copy as it is.
        let kept = matches!(first.1, Output::Judged(_)) || self.bufs.keep_output(gpu, spec, output);
        timed.push(first);
        self.bufs.reset(gpu, spec)?;
        timed.push(self.timed_repeat(time_one, output, kept, Output::AsBefore)?);
        let seen_initial = std::mem::replace(&mut self.bufs.initial, unseen_initial);
        // A check whose output must start poisoned (a compaction: nothing past the kept elements)
        // cannot be given another input's output.
        if spec.correctness.output_must_start_poisoned() {
            self.bufs.reset(gpu, spec)?;
        } else {
            self.bufs.reset_where(gpu, spec, starts_with_data)?;
        }
        timed.push(self.timed_run(time_one, output)?);
        let kept = self.bufs.keep_output(gpu, spec, output);
        self.bufs.reset_where(gpu, spec, starts_with_data)?;
        timed.push(self.timed_repeat(time_one, output, kept, Output::AsBefore)?);
        took.gpu += step.elapsed().as_secs_f64();
        let step = std::time::Instant::now();
        // Checks: the first two against the seen inputs, the last two against the unseen ones.
        let unseen_initial = std::mem::replace(&mut self.bufs.initial, seen_initial);
        let mut checks = self.compare_all(&timed[..2])?;
        self.bufs.initial = unseen_initial;
        checks.extend(self.compare_all(&timed[2..])?);
        took.checks += step.elapsed().as_secs_f64();
        let mut runs = Vec::new();
        for (((ms, got), check), setup) in timed.into_iter().zip(checks).zip(TimedSetup::TRY) {
            let output_as_before = match got {
                Output::Downloaded(data) => {
                    self.bufs.recycle(output, data);
                    false
                }
                Output::AsBefore | Output::Judged(_) => true,
            };
            runs.push(VerifiedRun {
                attempt,
                setup,
                ms,
                seed: match setup {
                    TimedSetup::UnseenInputs | TimedSetup::SeenAgain => unseen,
                    TimedSetup::AsTimed | TimedSetup::OutputsPoisoned => seen,
                },
                check,
                output_as_before,
            });
        }
        Ok(runs)
    }

    /// The seed of the inputs try `attempt` starts from: the samples', then the last try's unseen ones.
    fn seen_seed(&self, attempt: u32) -> u64 {
        if attempt <= 1 {
            self.seed
        } else {
            unseen_seed(self.seed, attempt - 1)
        }
    }

    /// One verified timed run: its time and its output.
    fn timed_run(
        &mut self,
        time_one: &mut TimeOne,
        output: usize,
    ) -> Result<(f64, Output), RunError> {
        let ms = time_one(self.bufs)?;
        let data = self.bufs.download(self.gpu, self.spec, output)?;
        Ok((ms, Output::Downloaded(data)))
    }

    /// A verified timed run on the inputs of the run whose output was `kept` on the device: an
    /// output the GPU finds byte-identical is not downloaded, and is `same` (that run's verdict).
    /// A comparison that fails to run costs only the download it would have saved.
    fn timed_repeat(
        &mut self,
        time_one: &mut TimeOne,
        output: usize,
        kept: bool,
        same: Output,
    ) -> Result<(f64, Output), RunError> {
        let ms = time_one(self.bufs)?;
        if kept
            && self
                .bufs
                .unchanged_since_kept(self.gpu, self.spec, output)
                .unwrap_or(false)
        {
            return Ok((ms, same));
        }
        let data = self.bufs.download(self.gpu, self.spec, output)?;
        Ok((ms, Output::Downloaded(data)))
    }

    /// Each output compared with what the buffers' current initial data makes correct. An output
    /// the same as an earlier one of these runs (same inputs, same expectation: byte-identical on
    /// the host, or found so on the GPU) gets its verdict without the comparison made again: the
    /// two runs of a try on the same inputs of a deterministic kernel repeat each other, and the
    /// comparison is most of a check's time.
    fn compare_all(&mut self, timed: &[(f64, Output)]) -> Result<Vec<Correctness>, RunError> {
        // The expectation only where some output is compared (a `same_as` reference runs for it).
        let mut expected = None;
        let mut verdicts: Vec<Correctness> = Vec::with_capacity(timed.len());
        for ((_, got), source) in timed.iter().zip(verdict_sources(timed)) {
            let verdict = match (source, got) {
                (_, Output::Judged(verdict)) => verdict.clone(),
                (Some(earlier), _) => verdicts[earlier].clone(),
                (None, Output::Downloaded(got)) => {
                    if expected.is_none() {
                        expected = expected_output(self.gpu, self.spec, self.bufs, self.compile)?;
                    }
                    let expected = expected.as_ref().ok_or_else(|| {
                        RunError::Invalid("a verified timed run without a check".into())
                    })?;
                    compare(self.spec, expected, &self.bufs.initial, got)?
                }
                (None, Output::AsBefore) => {
                    return Err(RunError::Invalid("a repeated run with none before".into()));
                }
            };
            verdicts.push(verdict);
        }
        Ok(verdicts)
    }
}

/// For each run's output, the earlier run whose verdict it takes (None: it is compared): the
/// run before it where the GPU found them the same, else the first byte-identical download.
fn verdict_sources(timed: &[(f64, Output)]) -> Vec<Option<usize>> {
    timed
        .iter()
        .enumerate()
        .map(|(i, (_, got))| match got {
            Output::AsBefore => i.checked_sub(1),
            Output::Judged(_) => None,
            Output::Downloaded(got) => timed[..i]
                .iter()
                .position(|(_, earlier)| matches!(earlier, Output::Downloaded(e) if e == got)),
        })
        .collect()
}

/// A verified run's output: downloaded, or found on the GPU to be the run before it's, or the
/// output of the check before the samples (on the same inputs), with that check's verdict.
enum Output {
    Downloaded(HostData),
    AsBefore,
    Judged(Correctness),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_takes_the_verdict_before_it_and_a_byte_identical_download_the_first_one() {
        let data = |v: u32| Output::Downloaded(HostData::W4(vec![v; 4]));
        let timed = [
            (0.1, data(1)),
            (0.1, Output::AsBefore),
            (0.1, data(2)),
            (0.1, data(1)),
            (0.1, data(3)),
            (0.1, Output::AsBefore),
            (
                0.1,
                Output::Judged(Correctness {
                    passed: true,
                    checked: 4,
                    mismatches: 0,
                    unwritten: 0,
                    rel_error: 0.0,
                    first_mismatch: None,
                    max_error: None,
                    elem: None,
                    max_ulp: None,
                }),
            ),
            (0.1, Output::AsBefore),
        ];
        // A judged output brings its own verdict: nothing to take, nothing to compare.
        assert_eq!(
            verdict_sources(&timed),
            [None, Some(0), None, Some(0), None, Some(4), None, Some(6)]
        );
        // A repeat with no run before it has no verdict to take: compare_all refuses it.
        assert_eq!(verdict_sources(&[(0.1, Output::AsBefore)]), [None]);
    }

    #[test]
    fn each_try_draws_inputs_no_other_verification_of_the_job_draws() {
        let seed = 42;
        let seeds: Vec<u64> = (1..=TRIES).map(|t| unseen_seed(seed, t)).collect();
        // Buffer i of a verification is drawn from its seed + i; the check after timing uses seed + 1.
        let near = |a: u64, b: u64| a.abs_diff(b) < 1_000;
        for (i, &s) in seeds.iter().enumerate() {
            assert!(!near(s, seed) && !near(s, seed + 1), "{s}");
            assert!(seeds[i + 1..].iter().all(|&o| !near(s, o)));
        }
        assert_eq!(unseen_seed(seed, 0), seed);
    }
}
