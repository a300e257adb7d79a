//! The built-in checks a manifest's `check.op` may name, parsed once from the manifest's word.

use serde::{Deserialize, Serialize};

/// A built-in CPU reference (`check = { op = "..." }`); `same_as` checks name a variant instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckOp {
    /// No check (also what a check without `op` means).
    None,
    Copy,
    Transpose,
    Sum,
    Matmul,
    Scan,
    Compact,
    Sort,
    Histogram,
    Function,
    Add,
    Softmax,
    Layernorm,
    Rmsnorm,
}

/// What an unknown op's error suggests: every op, and `same_as`.
pub const CHECK_OP_FIX: &str = "use op = \"copy\", \"transpose\", \"sum\", \"matmul\", \"scan\", \"compact\", \"sort\", \"histogram\", \"function\", \"add\", \"softmax\", \"layernorm\", \"rmsnorm\" or \"none\", or same_as = \"variant\"";

impl CheckOp {
    /// Every op, in the order the manifest format lists them.
    pub const ALL: [CheckOp; 14] = [
        CheckOp::Copy,
        CheckOp::Transpose,
        CheckOp::Sum,
        CheckOp::Matmul,
        CheckOp::Scan,
        CheckOp::Compact,
        CheckOp::Sort,
        CheckOp::Histogram,
        CheckOp::Function,
        CheckOp::Add,
        CheckOp::Softmax,
        CheckOp::Layernorm,
        CheckOp::Rmsnorm,
        CheckOp::None,
    ];

    /// The manifest's word for the op.
    pub fn name(self) -> &'static str {
        match self {
            CheckOp::None => "none",
            CheckOp::Copy => "copy",
            CheckOp::Transpose => "transpose",
            CheckOp::Sum => "sum",
            CheckOp::Matmul => "matmul",
            CheckOp::Scan => "scan",
            CheckOp::Compact => "compact",
            CheckOp::Sort => "sort",
            CheckOp::Histogram => "histogram",
            CheckOp::Function => "function",
            CheckOp::Add => "add",
            CheckOp::Softmax => "softmax",
            CheckOp::Layernorm => "layernorm",
            CheckOp::Rmsnorm => "rmsnorm",
        }
    }

    /// The op a manifest names, written exactly (no case folding, no trimming); None for an unknown word.
    pub fn parse(word: &str) -> Option<CheckOp> {
        CheckOp::ALL.into_iter().find(|op| op.name() == word)
    }
}

impl std::fmt::Display for CheckOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_parses_from_its_own_name() {
        for op in CheckOp::ALL {
            assert_eq!(CheckOp::parse(op.name()), Some(op));
            assert_eq!(op.to_string(), op.name());
        }
    }

    #[test]
    fn unknown_or_differently_written_ops_are_rejected() {
        for word in ["", "Copy", " sum", "sum ", "matmult", "same_as", "reduce"] {
            assert_eq!(CheckOp::parse(word), None, "{word:?}");
        }
    }

    #[test]
    fn serialises_to_the_manifest_word() {
        for op in CheckOp::ALL {
            let json = serde_json::to_string(&op).expect("serialises");
            assert_eq!(json, format!("\"{}\"", op.name()));
            let back: CheckOp = serde_json::from_str(&json).expect("deserialises");
            assert_eq!(back, op);
        }
    }

    #[test]
    fn the_fix_names_every_op() {
        for op in CheckOp::ALL {
            assert!(CHECK_OP_FIX.contains(&format!("\"{}\"", op.name())), "{op}");
        }
    }
}
