//! Arithmetic expressions of manifests and metric formulas (`ceil_div(NX, TILE)`, `2*NX*NY*4`), evaluated with evalexpr.

use std::collections::BTreeMap;

use evalexpr::{
    ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes, EvalexprError,
    Function, HashMapContext, IterateVariablesContext, Value,
};

/// Names bound while evaluating: sweep parameters in manifests, counter aliases in formulas.
pub type Bindings = BTreeMap<String, f64>;

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("cannot evaluate `{expr}`: {reason}")]
pub struct ExprError {
    pub expr: String,
    pub reason: String,
}

fn context(bindings: &Bindings) -> Result<HashMapContext<DefaultNumericTypes>, EvalexprError> {
    let mut ctx = HashMapContext::<DefaultNumericTypes>::new();
    for (name, value) in bindings {
        // Whole numbers stay integers so that `/` truncates like C integer division in index maths.
        let v = if value.fract() == 0.0 && value.abs() < 9.0e15 {
            Value::from_int(*value as i64)
        } else {
            Value::from_float(*value)
        };
        ctx.set_value(name.clone(), v)?;
    }
    ctx.set_function(
        "ceil_div".into(),
        Function::new(|arg| {
            let t = arg.as_fixed_len_tuple(2)?;
            let (a, b): (i64, i64) = (t[0].as_int()?, t[1].as_int()?);
            if b == 0 {
                return Err(EvalexprError::CustomMessage("ceil_div by zero".into()));
            }
            // Exact and without overflow for any operands: the floor quotient, plus one when a remainder is left.
            let overflow = || {
                EvalexprError::CustomMessage(format!("ceil_div({a}, {b}) does not fit in 64 bits"))
            };
            let (q, r) = (
                a.checked_div_euclid(b).ok_or_else(overflow)?,
                a.checked_rem_euclid(b).ok_or_else(overflow)?,
            );
            Ok(Value::from_int(if r != 0 && b > 0 {
                q.checked_add(1).ok_or_else(overflow)?
            } else {
                q
            }))
        }),
    )?;
    ctx.set_function(
        "float".into(),
        Function::new(|arg| Ok(Value::from_float(arg.as_number()?))),
    )?;
    Ok(ctx)
}

/// Evaluates `expr` to a number (integer or float) under `bindings`.
/// The longest expression accepted, in characters: far past any real one, and short of what
/// overflows the evaluator's recursion (tens of thousands of terms did).
pub const MAX_EXPR_CHARS: usize = 4096;
/// The deepest nesting of parentheses accepted.
pub const MAX_EXPR_DEPTH: usize = 64;

/// Refuses an expression too long or too deeply nested to evaluate safely.
fn within_limits(expr: &str) -> Result<(), String> {
    if expr.len() > MAX_EXPR_CHARS {
        return Err(format!(
            "it is {} characters long; expressions are limited to {MAX_EXPR_CHARS}",
            expr.len()
        ));
    }
    let mut depth = 0usize;
    for c in expr.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_EXPR_DEPTH {
            return Err(format!("it nests parentheses deeper than {MAX_EXPR_DEPTH}"));
        }
    }
    Ok(())
}

pub fn eval(expr: &str, bindings: &Bindings) -> Result<f64, ExprError> {
    let fail = |reason: String| ExprError {
        expr: expr.chars().take(80).collect(),
        reason,
    };
    within_limits(expr).map_err(fail)?;
    let ctx = context(bindings).map_err(|e| fail(e.to_string()))?;
    number(evalexpr::eval_with_context(expr, &ctx), || {
        bindings.keys().cloned().collect()
    })
    .map_err(fail)
}

/// The number an evaluation gave, or why there is none (`known` lists the bound names, asked only for an unknown one).
fn number(
    result: Result<Value<DefaultNumericTypes>, EvalexprError>,
    known: impl FnOnce() -> Vec<String>,
) -> Result<f64, String> {
    match result {
        Ok(Value::Int(i)) => Ok(i as f64),
        Ok(Value::Float(f)) => Ok(f),
        Ok(other) => Err(format!("it gives {other}, not a number")),
        Err(EvalexprError::VariableIdentifierNotFound(name)) => Err(format!(
            "unknown name `{name}`; known names: {}",
            known().join(", ")
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// A metric formula parsed once and evaluated many times (a metric over 100,000 kernel launches).
///
/// Unlike `eval`, every name is bound as a float, whole or not: a formula's `/` divides exactly
/// (`a / b` of two counters is not truncated), and each launch binds the same type, which the
/// reused context requires (evalexpr refuses to change a variable from integer to float).
pub struct Compiled {
    expr: String,
    tree: evalexpr::Node<DefaultNumericTypes>,
    ctx: HashMapContext<DefaultNumericTypes>,
}

impl Compiled {
    pub fn new(expr: &str) -> Result<Self, ExprError> {
        within_limits(expr).map_err(|reason| ExprError {
            expr: expr.chars().take(80).collect(),
            reason,
        })?;
        let fail = |e: EvalexprError| ExprError {
            expr: expr.to_string(),
            reason: e.to_string(),
        };
        let tree = evalexpr::build_operator_tree::<DefaultNumericTypes>(expr).map_err(fail)?;
        Ok(Compiled {
            expr: expr.to_string(),
            tree,
            ctx: context(&Bindings::new()).map_err(fail)?,
        })
    }

    pub fn eval<'a>(
        &mut self,
        bindings: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> Result<f64, ExprError> {
        let result = self.bind_and_eval(bindings)?;
        let known = || {
            let mut names: Vec<String> = self.ctx.iter_variable_names().collect();
            names.sort();
            names
        };
        number(result, known).map_err(|reason| ExprError {
            expr: self.expr.clone(),
            reason,
        })
    }

    /// A condition (a metric's `not_applicable` rule): true, or a number other than 0.
    pub fn holds<'a>(
        &mut self,
        bindings: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> Result<bool, ExprError> {
        match self.bind_and_eval(bindings)? {
            Ok(Value::Boolean(b)) => Ok(b),
            other => {
                let known = || self.ctx.iter_variable_names().collect();
                number(other, known)
                    .map(|v| v != 0.0)
                    .map_err(|reason| ExprError {
                        expr: self.expr.clone(),
                        reason,
                    })
            }
        }
    }

    /// Binds the names (an error here is the binding's), then evaluates (its result as evalexpr gives it).
    fn bind_and_eval<'a>(
        &mut self,
        bindings: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> Result<Result<Value<DefaultNumericTypes>, EvalexprError>, ExprError> {
        for (name, value) in bindings {
            self.ctx
                .set_value(name.to_string(), Value::from_float(value))
                .map_err(|e| ExprError {
                    expr: self.expr.clone(),
                    reason: e.to_string(),
                })?;
        }
        Ok(self.tree.eval_with_context(&self.ctx))
    }
}

/// Evaluates `expr` and requires a whole, non-negative result (lengths, grid and block sizes).
pub fn eval_count(expr: &str, bindings: &Bindings) -> Result<u64, ExprError> {
    let v = eval(expr, bindings)?;
    // 2^64 and above would saturate to u64::MAX: an error, not a silently wrong size.
    if v < 0.0 || v.fract() != 0.0 || !v.is_finite() || v >= 18_446_744_073_709_551_616.0 {
        return Err(ExprError {
            expr: expr.to_string(),
            reason: format!("it gives {v}, but a whole number >= 0 is needed here"),
        });
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(pairs: &[(&str, f64)]) -> Bindings {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn integer_maths_truncates_like_c() {
        let env = b(&[("NX", 4000.0), ("TILE", 32.0)]);
        assert_eq!(eval("NX / TILE", &env).unwrap(), 125.0);
        assert_eq!(eval("ceil_div(NX, TILE)", &env).unwrap(), 125.0);
        assert_eq!(eval("ceil_div(4001, TILE)", &env).unwrap(), 126.0);
        assert_eq!(eval("2 * NX * NX * 4", &env).unwrap(), 128_000_000.0);
        // Too long, too deep, too large: errors, not a stack overflow or a saturated number.
        let long = vec!["1"; 5000].join(" + ");
        assert!(
            eval(&long, &env)
                .unwrap_err()
                .to_string()
                .contains("limited to")
        );
        let deep = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert!(
            eval(&deep, &env)
                .unwrap_err()
                .to_string()
                .contains("deeper than")
        );
        assert!(Compiled::new(&deep).is_err());
        assert!(eval_count("2.0 ^ 70", &env).is_err());
        // Negative and extreme operands: no panic, no wrap.
        assert_eq!(eval("ceil_div(0 - 7, 2)", &env).unwrap(), -3.0);
        assert_eq!(
            eval("ceil_div(9223372036854775807, 2)", &env).unwrap(),
            4611686018427387904.0
        );
        assert!(
            eval("ceil_div(0-9223372036854775807-1, 0-1)", &env)
                .unwrap_err()
                .to_string()
                .contains("does not fit in 64 bits")
        );
        assert_eq!(eval("max(NX, 5000)", &env).unwrap(), 5000.0);
    }

    #[test]
    fn float_formulas() {
        let env = b(&[("req", 128.0), ("sectors", 32.0)]);
        assert_eq!(eval("100.0 * req / (32.0 * sectors)", &env).unwrap(), 12.5);
        assert_eq!(
            eval("100 * float(req) / (32 * sectors)", &env).unwrap(),
            12.5
        );
    }

    #[test]
    fn compiled_formulas_bind_floats_so_whole_and_fractional_launches_mix() {
        // ncu prints `100` for one launch and `12.50` for the next; both must evaluate, exactly.
        let mut f = Compiled::new("if(sectors > 0, pct, 0.0 / 0.0)").unwrap();
        assert_eq!(f.eval([("pct", 100.0), ("sectors", 4.0)]).unwrap(), 100.0);
        assert_eq!(f.eval([("pct", 12.5), ("sectors", 4.0)]).unwrap(), 12.5);
        assert_eq!(f.eval([("pct", 25.0), ("sectors", 4.0)]).unwrap(), 25.0);
        assert!(f.eval([("pct", 0.0), ("sectors", 0.0)]).unwrap().is_nan());
        // Counters divide exactly, where `eval` (manifests) truncates like C.
        assert_eq!(
            Compiled::new("a / b")
                .unwrap()
                .eval([("a", 7.0), ("b", 2.0)])
                .unwrap(),
            3.5
        );
        let err = Compiled::new("a * c")
            .unwrap()
            .eval([("a", 1.0)])
            .unwrap_err();
        assert!(
            err.to_string().contains("unknown name `c`; known names: a"),
            "{err}"
        );
    }

    #[test]
    fn unknown_name_lists_known_ones() {
        let err = eval("NX * NZ", &b(&[("NX", 1.0)])).unwrap_err();
        assert!(err.to_string().contains("unknown name `NZ`"), "{err}");
        assert!(err.to_string().contains("NX"), "{err}");
    }

    #[test]
    fn counts_must_be_whole() {
        assert!(eval_count("3 / 2.0", &Bindings::new()).is_err());
        assert!(eval_count("0 - 1", &Bindings::new()).is_err());
        assert_eq!(eval_count("ceil_div(10, 3)", &Bindings::new()).unwrap(), 4);
        assert!(eval("ceil_div(1, 0)", &Bindings::new()).is_err());
    }
}
