//! What a verification found: elements checked, mismatches, unwritten elements and the error.

use serde::{Deserialize, Serialize};

use super::elem::ElemType;

/// What a correctness check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correctness {
    pub passed: bool,
    /// Elements compared.
    pub checked: u64,
    pub mismatches: u64,
    /// Elements still holding the poison pattern: never written by the kernel.
    pub unwritten: u64,
    /// ‖out − ref‖₂ / ‖ref‖₂ for float comparisons with a tolerance; 0 for exact ones.
    pub rel_error: f64,
    pub first_mismatch: Option<String>,
    /// For float comparisons with a tolerance: max |out − ref| / max |ref| (the worst element on the output's scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error: Option<f64>,
    /// The output type the errors are measured in, so a report can say them in units of its epsilon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elem: Option<ElemType>,
    /// For `function` checks: the largest error found, in units in the last place of the output type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ulp: Option<f64>,
}

impl Correctness {
    /// The relative L2 error in units of the output type's epsilon (`None` for exact comparisons).
    pub fn error_in_eps(&self) -> Option<f64> {
        let eps = self.elem?.epsilon();
        (eps > 0.0 && self.max_error.is_some()).then(|| self.rel_error / eps)
    }
}
