//! The sweep: every combination of a manifest's axes, the bindings each gives, and how many jobs they make.

use std::collections::BTreeMap;

use super::job::{JobKey, format_params};
use super::manifest::{AxisValue, Manifest};
use crate::expr::Bindings;

/// The most jobs one suite may expand to (a sweep of millions is a typo, not a study).
pub const MAX_JOBS: usize = 100_000;

/// Every combination of the axes, each as the bindings it adds.
pub(crate) fn combinations(axes: &BTreeMap<String, Vec<AxisValue>>) -> Vec<BTreeMap<String, i64>> {
    let mut out = vec![BTreeMap::new()];
    for (axis, values) in axes {
        let mut next = Vec::new();
        for prefix in &out {
            for v in values {
                let mut b = prefix.clone();
                match v {
                    AxisValue::Number(n) => {
                        b.insert(axis.clone(), *n);
                    }
                    AxisValue::Table(t) => b.extend(t.clone()),
                }
                next.push(b);
            }
        }
        out = next;
    }
    out
}

/// The bindings of an expression: the parameters of each map, later maps winning.
pub(crate) fn to_bindings(params: &[&BTreeMap<String, i64>]) -> Bindings {
    params
        .iter()
        .flat_map(|p| p.iter().map(|(k, v)| (k.clone(), *v as f64)))
        .collect()
}

/// How many jobs the manifest's sweep expands to (saturating): counted before anything is
/// expanded, because the sizes multiply.
pub(crate) fn job_count(m: &Manifest) -> usize {
    let points = |axes: &BTreeMap<String, Vec<AxisValue>>| {
        axes.values().fold(1usize, |n, v| n.saturating_mul(v.len()))
    };
    points(&m.axes).saturating_mul(
        m.variants
            .iter()
            .fold(0usize, |n, v| n.saturating_add(points(&v.axes))),
    )
}

/// A job's key: `variant[its params] @ the suite's sweep point` (`-` for a suite without axes).
pub(crate) fn job_key(
    variant: &str,
    group_params: &BTreeMap<String, i64>,
    variant_params: &BTreeMap<String, i64>,
) -> JobKey {
    let group = format_params(group_params);
    let label_params = if variant_params.is_empty() {
        String::new()
    } else {
        format!("[{}]", format_params(variant_params))
    };
    JobKey {
        id: format!(
            "{}{} @ {}",
            variant,
            label_params,
            if group.is_empty() { "-" } else { &group }
        ),
        variant: variant.to_string(),
        variant_params: variant_params.clone(),
        group,
        group_params: group_params.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes(list: &[(&str, Vec<AxisValue>)]) -> BTreeMap<String, Vec<AxisValue>> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn combinations_take_the_first_axis_outermost() {
        let a = axes(&[
            ("M", vec![AxisValue::Number(1), AxisValue::Number(2)]),
            ("N", vec![AxisValue::Number(10), AxisValue::Number(20)]),
        ]);
        let got: Vec<Vec<i64>> = combinations(&a)
            .iter()
            .map(|b| b.values().copied().collect())
            .collect();
        assert_eq!(got, [[1, 10], [1, 20], [2, 10], [2, 20]]);
    }

    #[test]
    fn a_table_value_binds_each_of_its_keys() {
        let shape = BTreeMap::from([("NX".to_string(), 4), ("NY".to_string(), 8)]);
        let a = axes(&[("shape", vec![AxisValue::Table(shape.clone())])]);
        assert_eq!(combinations(&a), [shape]);
        assert_eq!(combinations(&BTreeMap::new()), [BTreeMap::new()]);
    }

    #[test]
    fn later_bindings_win() {
        let group = BTreeMap::from([("N".to_string(), 1), ("M".to_string(), 2)]);
        let variant = BTreeMap::from([("N".to_string(), 3)]);
        let b = to_bindings(&[&group, &variant]);
        assert_eq!(b["N"], 3.0);
        assert_eq!(b["M"], 2.0);
    }

    #[test]
    fn job_count_multiplies_the_suite_axes_by_each_variants_points() {
        let m: Manifest = toml::from_str(
            r#"
            [suite]
            name = "s"
            [axes]
            N = [1, 2, 3]
            [[variants]]
            name = "a"
            axes = { K = [1, 2] }
            [[variants]]
            name = "b"
            "#,
        )
        .expect("a valid manifest");
        assert_eq!(job_count(&m), 9);
    }

    #[test]
    fn job_key_names_the_variant_its_params_and_the_sweep_point() {
        let group = BTreeMap::from([("M".to_string(), 64), ("N".to_string(), 1024)]);
        let own = BTreeMap::from([("TILE".to_string(), 32)]);
        let key = job_key("tiled", &group, &own);
        assert_eq!(key.id, "tiled[TILE=32] @ M=64,N=1024");
        assert_eq!(key.group, "M=64,N=1024");
        assert_eq!(key.variant, "tiled");
        assert_eq!(key.variant_params, own);
        let bare = job_key("naive", &BTreeMap::new(), &BTreeMap::new());
        assert_eq!(bare.id, "naive @ -");
        assert_eq!(bare.group, "");
    }
}
