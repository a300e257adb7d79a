//! The only place that knows every stage: suites -> plans -> jobs through an executor -> records, saved after every job, and the reports re-rendered from disk.
//!
//! Its rooms, by stage: `planning` (which jobs and metrics each suite runs), `shards` (jobs
//! spread over shards and GPU models by expected cost), `suite_run` (a suite's run directory),
//! `dispatch` (the lanes of one host taking tasks and passes, each record saved as it comes),
//! `rules` (its decisions, pure: task order, which work next, when a task runs alone),
//! `host_share` (the host's ncu slot and link), `lanes` (a thread per GPU), `measure` (one GPU's
//! bounds and jobs made into records) and `reports` (re-rendered from disk).

mod dispatch;
mod host_share;
mod lanes;
mod measure;
mod planning;
mod reports;
mod rules;
mod sanitize;
mod sanitize_batch;
mod shapes;
mod shards;
mod suite_run;

pub use dispatch::{run, run_sharing};
pub use host_share::HostShare;
pub use planning::{ProfileRequest, RunSettings, SuitePlan, plan, screen};
pub use reports::{render_reports, write_timelines};
pub use sanitize::{NO_SHARED_MEMORY, chosen_jobs, uses_shared_memory};
pub use shapes::{ShapeChoice, keep_shapes};
pub use shards::{MAX_SHARDS, Shard, expected_cost, keep_shard, pools_by_model, shard_of};
