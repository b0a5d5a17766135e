//! Helpers of the applier's own unit tests (record builders come from
//! `dnsplane-testing`, which every crate's tests share).
use crate::provider::fault::{FaultRule, FaultRuleConfig, compile_rules};
pub(crate) use dnsplane_testing::records::zone;

/// `[[faults]]` tables written as in the config file, compiled for [`zone`]; the
/// problems as the config would report them.
pub(crate) fn try_rules(toml_text: &str) -> Result<Vec<FaultRule>, Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Rules {
        #[serde(default)]
        faults: Vec<FaultRuleConfig>,
    }
    let rules: Rules = toml::from_str(toml_text).expect("fault tables parse");
    compile_rules(&rules.faults, &[zone()])
}

/// [`try_rules`], for rules that are valid.
pub(crate) fn rules(toml_text: &str) -> Vec<FaultRule> {
    try_rules(toml_text).expect("valid fault rules")
}
