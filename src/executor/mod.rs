//! How the scheduler gets jobs run: a trait with one implementation that runs jobs in child processes on a real GPU (one `__jobs` child serving a suite's jobs in turn), and a mock that needs no GPU.
//!
//! hyperfine's `MockExecutor` behind a hidden flag is the model: the mock exercises every step of
//! orchestration (plans, records, saving after each job, reports, baselines, verdicts) with
//! deterministic stand-in numbers, and every run it makes says MOCK.

pub mod child;
pub mod contract;
pub mod cupti;
pub mod job_server;
pub mod mock;
pub mod protocol;

pub use child::ChildExecutor;
pub use contract::{Environment, Executor, Failure, RunContext};
pub use mock::MockExecutor;
