//! JSON verdict report: the whole comparison, with the counts and the overall outcome on top (pure).

use serde_json::{Value, json};

use super::comparison::Comparison;
use super::verdict::Verdict;
use crate::report::Exporter;

pub struct Json;

/// `compare` shows no verdicts: they are removed from every level.
fn strip_verdicts(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("verdict");
            map.values_mut().for_each(strip_verdicts);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_verdicts),
        _ => {}
    }
}

impl Exporter<Comparison> for Json {
    fn file_name(&self) -> &'static str {
        "json"
    }

    fn render(&self, c: &Comparison) -> anyhow::Result<String> {
        let verdicts = c.verdicts;
        let mut doc = json!({ "comparison": c });
        if verdicts {
            let counts: serde_json::Map<String, Value> = [
                Verdict::Regressed,
                Verdict::Improved,
                Verdict::New,
                Verdict::Missing,
                Verdict::Same,
            ]
            .into_iter()
            .map(|v| (v.word().to_ascii_lowercase(), json!(c.count(v))))
            .collect();
            doc["regressed"] = json!(c.regressed());
            doc["counts"] = Value::Object(counts);
        } else {
            strip_verdicts(&mut doc);
        }
        Ok(serde_json::to_string_pretty(&doc)?)
    }
}
