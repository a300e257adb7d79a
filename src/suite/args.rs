//! The text forms of launch arguments and step operands: a buffer `a` or `a[offset]`, a scalar `u32: NX*NY`.

use super::job::ArgSpec;
use super::manifest::Manifest;

/// A reference to a buffer or a part of it: `a` (index, None) or `a[chunk * M]` (index, the
/// offset's expression), when `text` names one of the manifest's buffers.
pub(crate) fn buffer_arg<'t>(m: &Manifest, text: &'t str) -> Option<(usize, Option<&'t str>)> {
    let (name, offset) = split_indexed(text)?;
    m.buffers
        .iter()
        .position(|b| b.name == name)
        .map(|i| (i, offset))
}

/// The index of the `[[tensor_maps]]` entry `text` names, if any (buffers are looked up first).
pub(crate) fn tensor_map_arg(m: &Manifest, text: &str) -> Option<usize> {
    let name = text.trim();
    if m.buffers.iter().any(|b| b.name == name) {
        return None;
    }
    m.tensor_maps.iter().position(|t| t.name == name)
}

/// `name` -> (name, None); `name[expr]` -> (name, Some(expr)); None for anything else.
pub(crate) fn split_indexed(text: &str) -> Option<(&str, Option<&str>)> {
    let text = text.trim();
    let is_name = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_');
    match text.strip_suffix(']').and_then(|t| t.split_once('[')) {
        Some((name, index)) if is_name(name.trim()) && !index.trim().is_empty() => {
            Some((name.trim(), Some(index.trim())))
        }
        Some(_) => None,
        None => is_name(text).then_some((text, None)),
    }
}

/// Splits `u32: NX*NY` into its type and expression; plain expressions are i32.
pub(crate) fn parse_scalar_arg(arg: &str) -> Result<(&str, &str), ()> {
    let (ty, e) = match arg.split_once(':') {
        Some((t, e)) => (t.trim(), e.trim()),
        None => ("i32", arg.trim()),
    };
    if ["i32", "u32", "i64", "u64", "f32", "f64", "f16", "bf16"].contains(&ty) && !e.is_empty() {
        Ok((ty, e))
    } else {
        Err(())
    }
}

/// A scalar argument of type `ty` (as `parse_scalar_arg` gives it) with value `x`, or None when
/// `x` lies outside the type's range.
pub(crate) fn scalar_arg(ty: &str, x: f64) -> Option<ArgSpec> {
    let (lo, hi) = match ty {
        "u32" => (0.0, u32::MAX as f64),
        "i64" => (i64::MIN as f64, i64::MAX as f64),
        "u64" => (0.0, u64::MAX as f64),
        "f32" => (f32::MIN as f64, f32::MAX as f64),
        "f16" => (half::f16::MIN.to_f64(), half::f16::MAX.to_f64()),
        "bf16" => (half::bf16::MIN.to_f64(), half::bf16::MAX.to_f64()),
        "f64" => (f64::MIN, f64::MAX),
        _ => (i32::MIN as f64, i32::MAX as f64),
    };
    if x < lo || x > hi {
        return None;
    }
    Some(match ty {
        "u32" => ArgSpec::U32(x as u32),
        "i64" => ArgSpec::I64(x as i64),
        "u64" => ArgSpec::U64(x as u64),
        "f32" => ArgSpec::F32(x as f32),
        "f64" => ArgSpec::F64(x),
        "f16" => ArgSpec::F16(half::f16::from_f64(x).to_bits()),
        "bf16" => ArgSpec::Bf16(half::bf16::from_f64(x).to_bits()),
        _ => ArgSpec::I32(x as i32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_indexed_reads_names_and_indexed_names() {
        assert_eq!(split_indexed(" a "), Some(("a", None)));
        assert_eq!(split_indexed("d_x2"), Some(("d_x2", None)));
        assert_eq!(
            split_indexed("a[ chunk * M ]"),
            Some(("a", Some("chunk * M")))
        );
        assert_eq!(split_indexed("a[]"), None);
        assert_eq!(split_indexed("[3]"), None);
        assert_eq!(split_indexed("a b"), None);
        assert_eq!(split_indexed("N*2"), None);
        assert_eq!(split_indexed(""), None);
    }

    #[test]
    fn parse_scalar_arg_defaults_to_i32_and_knows_the_types() {
        assert_eq!(parse_scalar_arg("NX*NY"), Ok(("i32", "NX*NY")));
        assert_eq!(parse_scalar_arg(" u32 : N "), Ok(("u32", "N")));
        assert_eq!(parse_scalar_arg("bf16: 0.5"), Ok(("bf16", "0.5")));
        assert_eq!(parse_scalar_arg("u8: N"), Err(()));
        assert_eq!(parse_scalar_arg("f32:"), Err(()));
    }

    #[test]
    fn scalar_arg_keeps_values_inside_their_type() {
        assert!(matches!(scalar_arg("i32", -5.0), Some(ArgSpec::I32(-5))));
        assert!(matches!(
            scalar_arg("u32", 4e9),
            Some(ArgSpec::U32(4_000_000_000))
        ));
        assert!(scalar_arg("u32", -1.0).is_none());
        assert!(scalar_arg("i32", 3e9).is_none());
        assert!(scalar_arg("f16", 1e5).is_none());
        assert!(matches!(
            scalar_arg("f16", 1.0),
            Some(ArgSpec::F16(b)) if b == half::f16::ONE.to_bits()
        ));
        assert!(matches!(scalar_arg("u64", 1e19), Some(ArgSpec::U64(_))));
    }
}
