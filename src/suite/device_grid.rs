//! Grids that name `SMS`, the device's multiprocessor count (a persistent kernel's one block an
//! SM): evaluated at a nominal count when the suite loads, where no GPU is known, and again at each
//! GPU model's own count before its jobs run. Pure: the count is passed in.

use super::job::{JobSpec, SmsGrid};
use crate::expr::{self, Bindings};

/// The name grid expressions use for the device's multiprocessor count.
pub const SMS: &str = "SMS";

/// The multiprocessor count a grid that names `SMS` is evaluated at before a GPU is known
/// (loading, `plan`, `--mock-gpu`): an H100 SXM's or H200's.
pub const NOMINAL_SMS: u32 = 132;

/// A grid that does not evaluate at a GPU's count, or breaks the launch's clusters there.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "job `{job}`: its grid [{exprs}] at SMS = {sms} (this GPU's multiprocessor count): {why}\n  fix: {fix}"
)]
pub struct SmsGridError {
    pub job: String,
    pub exprs: String,
    pub sms: u32,
    pub why: String,
    pub fix: String,
}

/// Whether expression `e` names `SMS` (as a whole identifier, not inside another name).
pub(crate) fn names_sms(e: &str) -> bool {
    e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| word == SMS)
}

/// `env` with `SMS` bound to `sms`.
pub(crate) fn with_sms(env: &Bindings, sms: u32) -> Bindings {
    let mut env = env.clone();
    env.insert(SMS.into(), f64::from(sms));
    env
}

/// The grid of `exprs` at `sms`: each dimension 1 to 2^32-1, and a whole number of `cluster`'s.
fn grid_at(
    exprs: &[String],
    env: &Bindings,
    sms: u32,
    cluster: Option<[u32; 3]>,
) -> Result<[u32; 3], (String, String)> {
    let env = with_sms(env, sms);
    let mut grid = [1u32; 3];
    for (i, e) in exprs.iter().enumerate().take(3) {
        let n = expr::eval_count(e, &env).map_err(|err| {
            (
                format!("`{e}`: {err}"),
                "write the grid so that it evaluates for any SM count (`SMS`, `SMS - SMS % 2`)"
                    .to_string(),
            )
        })?;
        if n == 0 || n > u64::from(u32::MAX) {
            return Err((
                format!("grid[{i}] = `{e}` gives {n}"),
                "keep each grid dimension between 1 and 2^32-1 for any SM count (`max(SMS - SMS % 4, 4)`)".into(),
            ));
        }
        grid[i] = n as u32;
    }
    if let Some(c) = cluster
        && let Some(i) = (0..3).find(|&i| !grid[i].is_multiple_of(c[i]))
    {
        return Err((
            format!(
                "the grid {grid:?} is not a whole number of clusters {c:?} (in {}, {} blocks in clusters of {})",
                ["x", "y", "z"][i],
                grid[i],
                c[i]
            ),
            format!(
                "round the grid down to the cluster's multiple: `SMS - SMS % {}`",
                c[i]
            ),
        ));
    }
    Ok(grid)
}

/// Evaluates the grid of every launch of `jobs` that names `SMS` at `sms`, a GPU's count.
pub fn bind_sms(jobs: &mut [JobSpec], sms: u32) -> Result<(), SmsGridError> {
    for job in jobs.iter_mut() {
        let id = job.id().to_string();
        let reference = job.reference.iter_mut().flat_map(|r| r.launches.iter_mut());
        for l in job.launches.iter_mut().chain(reference) {
            let Some(g) = &l.grid_of_sms else { continue };
            l.grid =
                grid_at(&g.exprs, &g.env, sms, l.cluster).map_err(|(why, fix)| SmsGridError {
                    job: id.clone(),
                    exprs: g.exprs.join(", "),
                    sms,
                    why,
                    fix,
                })?;
        }
    }
    Ok(())
}

/// Whether any launch of `jobs` has a grid that names `SMS`.
pub fn any_sms_grid(jobs: &[JobSpec]) -> bool {
    jobs.iter()
        .flat_map(|j| {
            j.launches
                .iter()
                .chain(j.reference.iter().flat_map(|r| &r.launches))
        })
        .any(|l| l.grid_of_sms.is_some())
}

/// The grid of `exprs` at load: evaluated at the nominal count when it names `SMS` (then kept for
/// `bind_sms`), else as is. `None` where it does not name `SMS`.
pub(crate) fn sms_grid(exprs: &[String], env: &Bindings) -> Option<SmsGrid> {
    exprs.iter().any(|e| names_sms(e)).then(|| SmsGrid {
        exprs: exprs.to_vec(),
        env: env.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sms_is_found_as_a_whole_name_only() {
        assert!(names_sms("SMS"));
        assert!(names_sms("SMS - SMS % 2"));
        assert!(names_sms("max(SMS,4)"));
        assert!(!names_sms("NSMS + 1"));
        assert!(!names_sms("SMS_2 * 4"));
        assert!(!names_sms("ceil_div(N, 256)"));
    }

    #[test]
    fn a_grid_is_evaluated_at_the_count_given_and_checked_against_its_cluster() {
        let env: Bindings = [("N".to_string(), 4096.0)].into_iter().collect();
        let exprs = vec!["SMS - SMS % 4".to_string()];
        assert_eq!(
            grid_at(&exprs, &env, 132, Some([4, 1, 1])).unwrap(),
            [132, 1, 1]
        );
        assert_eq!(
            grid_at(&exprs, &env, 114, Some([4, 1, 1])).unwrap(),
            [112, 1, 1]
        );
        // A grid of SMS alone on a GPU with an odd count is not a whole number of pairs.
        let (why, fix) = grid_at(&["SMS".to_string()], &env, 133, Some([2, 1, 1])).unwrap_err();
        assert!(
            why.contains("133") && why.contains("clusters of 2"),
            "{why}"
        );
        assert!(fix.contains("SMS - SMS % 2"), "{fix}");
        let (why, _) = grid_at(&["SMS - 200".to_string()], &env, 132, None).unwrap_err();
        assert!(why.contains("SMS - 200"), "{why}");
        // The job's own names are still bound.
        let both = vec!["min(SMS, ceil_div(N, 256))".to_string()];
        assert_eq!(grid_at(&both, &env, 132, None).unwrap(), [16, 1, 1]);
    }
}
