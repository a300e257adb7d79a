//! NVML's clock-event reasons (why the SM clock is where it is: the power cap, thermal slowdown, a hardware brake, idle, …) as a small set stored by name, and the words a report uses for them (pure data).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Each reason: NVML's name (as nvml-wrapper's `ThrottleReasons` flags are named, the name
/// stored), whether it lowers the clock under load, and the words reports use.
const REASONS: [(&str, bool, &str); 9] = [
    ("GPU_IDLE", false, "idle"),
    ("APPLICATIONS_CLOCKS_SETTING", false, "application clocks"),
    ("SW_POWER_CAP", true, "power cap"),
    ("HW_SLOWDOWN", true, "hardware slowdown"),
    ("SYNC_BOOST", true, "sync boost"),
    ("SW_THERMAL_SLOWDOWN", true, "thermal slowdown (software)"),
    ("HW_THERMAL_SLOWDOWN", true, "thermal slowdown (hardware)"),
    ("HW_POWER_BRAKE_SLOWDOWN", true, "power brake"),
    ("DISPLAY_CLOCK_SETTING", true, "display clock"),
];

/// NVML names one bit twice: `USER_DEFINED_CLOCKS` is `APPLICATIONS_CLOCKS_SETTING`.
const ALIASES: [(&str, &str); 1] = [("USER_DEFINED_CLOCKS", "APPLICATIONS_CLOCKS_SETTING")];

/// The clock-event reasons NVML reported at one reading, stored as the list of their names
/// (`["SW_POWER_CAP"]`); empty: none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockEvents(u16);

impl ClockEvents {
    /// The set of the reasons named; a name NVML has and this list does not (a newer driver's) is
    /// an error naming it, so that a reason is never dropped unseen.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<ClockEvents, String> {
        let mut bits = 0u16;
        for name in names {
            let name = name.as_ref();
            let canonical = ALIASES
                .iter()
                .find(|(alias, _)| *alias == name)
                .map_or(name, |(_, to)| *to);
            if canonical == "NONE" {
                continue;
            }
            let i = REASONS
                .iter()
                .position(|(n, _, _)| *n == canonical)
                .ok_or_else(|| {
                    format!(
                        "`{name}` is not a clock-event reason gpu-lab knows (it knows {})",
                        REASONS.map(|r| r.0).join(", ")
                    )
                })?;
            bits |= 1 << i;
        }
        Ok(ClockEvents(bits))
    }

    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// NVML's names of the reasons in the set.
    pub fn names(&self) -> Vec<&'static str> {
        self.reasons().map(|r| r.0).collect()
    }

    /// A reason that lowers the clock under load is active (idle and application clocks do not
    /// count, as `Snapshot::is_throttled`).
    pub fn lowers_clock(&self) -> bool {
        self.reasons().any(|r| r.1)
    }

    /// The set with `other`'s reasons too.
    pub fn union(self, other: ClockEvents) -> ClockEvents {
        ClockEvents(self.0 | other.0)
    }

    fn reasons(&self) -> impl Iterator<Item = &'static (&'static str, bool, &'static str)> {
        let bits = self.0;
        REASONS
            .iter()
            .enumerate()
            .filter(move |(i, _)| bits & (1 << i) != 0)
            .map(|(_, r)| r)
    }
}

/// The words a report uses for NVML's reason `name` (`SW_POWER_CAP` → "power cap"); the name
/// itself where it is not a known reason.
pub fn clock_event_words(name: &str) -> &str {
    REASONS.iter().find(|r| r.0 == name).map_or(name, |r| r.2)
}

/// Whether NVML's reason `name` lowers the clock under load.
pub fn clock_event_lowers_clock(name: &str) -> bool {
    REASONS.iter().any(|r| r.0 == name && r.1)
}

/// How many readings had each reason: the count per NVML name (a job's samples).
pub fn count_clock_events(events: impl IntoIterator<Item = ClockEvents>) -> BTreeMap<String, u32> {
    let mut counts = BTreeMap::new();
    for e in events {
        for name in e.names() {
            *counts.entry(name.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

impl Serialize for ClockEvents {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.names().serialize(s)
    }
}

impl<'de> Deserialize<'de> for ClockEvents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        ClockEvents::from_names(&names).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip_by_name_and_aliases_fold() {
        let e = ClockEvents::from_names(&["SW_POWER_CAP", "GPU_IDLE", "NONE"]).unwrap();
        assert_eq!(e.names(), vec!["GPU_IDLE", "SW_POWER_CAP"]);
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, r#"["GPU_IDLE","SW_POWER_CAP"]"#);
        assert_eq!(serde_json::from_str::<ClockEvents>(&json).unwrap(), e);
        assert_eq!(
            ClockEvents::from_names(&["USER_DEFINED_CLOCKS"]).unwrap(),
            ClockEvents::from_names(&["APPLICATIONS_CLOCKS_SETTING"]).unwrap()
        );
        let err = ClockEvents::from_names(&["NEW_REASON"]).unwrap_err();
        assert!(
            err.contains("`NEW_REASON`") && err.contains("SW_POWER_CAP"),
            "{err}"
        );
    }

    #[test]
    fn idle_and_application_clocks_do_not_lower_the_clock() {
        let set = |n: &[&str]| ClockEvents::from_names(n).unwrap();
        assert!(!set(&["GPU_IDLE", "APPLICATIONS_CLOCKS_SETTING"]).lowers_clock());
        assert!(set(&["SW_POWER_CAP"]).lowers_clock());
        assert!(set(&["HW_THERMAL_SLOWDOWN"]).lowers_clock());
        assert!(!ClockEvents::default().lowers_clock());
        assert_eq!(clock_event_words("SW_POWER_CAP"), "power cap");
        assert_eq!(clock_event_words("ODD"), "ODD");
    }

    #[test]
    fn counts_are_per_reason_over_the_readings() {
        let set = |n: &[&str]| ClockEvents::from_names(n).unwrap();
        let counts = count_clock_events([
            set(&["SW_POWER_CAP"]),
            set(&[]),
            set(&["SW_POWER_CAP", "SW_THERMAL_SLOWDOWN"]),
        ]);
        assert_eq!(counts.get("SW_POWER_CAP"), Some(&2));
        assert_eq!(counts.get("SW_THERMAL_SLOWDOWN"), Some(&1));
        assert_eq!(counts.len(), 2);
        assert_eq!(
            set(&["GPU_IDLE"]).union(set(&["SW_POWER_CAP"])).names(),
            vec!["GPU_IDLE", "SW_POWER_CAP"]
        );
    }
}
