//! A PowerDNS account whose API key is wrong: the applier opens the account's circuit
//! and says so in `GetStatus` (circuit "open", level "degraded", the provider's 401
//! in the reason), the records show rejected; once the key file is fixed the
//! circuit's half-open probe goes through with the key read again, and the records
//! converge without restarting anything.
use crate::stack::{pdns_of, start_pdns};
use dnsplane_common::pb::{self, RecordStateKind};
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools, workload};
use std::time::Duration;

#[test]
fn pdns_wrong_api_key_opens_the_circuit_and_a_fixed_key_file_closes_it() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = start_pdns() else { return };
    let pdns = pdns_of(&server);
    let key_file = pdns.api_key_file.clone();
    let good_key = std::fs::read_to_string(&key_file).expect("the key");
    std::fs::write(&key_file, "not-the-key").expect("write the key file");
    let zone = server.zone().clone();
    let s = RealStack::start(
        server,
        tools,
        Options {
            account_extra:
                "[accounts.circuit]\ncool_down = \"1s\"\nmax_cool_down = \"2s\"\njitter = 0.0\n"
                    .into(),
            ..Options::default()
        },
    );
    let recs = workload::initial(3);
    let desired: Vec<pb::DesiredRecord> = recs.iter().map(|r| r.desired(&zone)).collect();
    assert_eq!(s.push(desired), 3);
    all_rejected(&s, 3);
    let st = s.applier_status_grpcurl();
    let account = &st["accounts"][0];
    assert_ne!(account["circuit"], "closed", "{st}");
    assert_eq!(st["level"], "degraded", "{st}");
    assert!(
        st["reason"].as_str().is_some_and(|r| r.contains("401")),
        "the provider's answer is in the reason: {st}"
    );

    // The operator fixes the key file; nothing is restarted.
    std::fs::write(&key_file, &good_key).expect("fix the key file");
    s.wait_until(
        "the records to converge after the key is fixed",
        Duration::from_secs(60),
        |s| s.record_states(false).is_empty().then_some(()),
    );
    let st = s.applier_status_grpcurl();
    assert_eq!(st["accounts"][0]["circuit"], "closed", "{st}");
    assert_eq!(
        s.dig(&recs[0].name(&zone), recs[0].rtype),
        [recs[0].dig.clone()]
    );
}

/// Waits (30 s at most) until the planner shows `n` records, every one rejected;
/// returns their states.
pub(crate) fn all_rejected(s: &RealStack, n: usize) -> Vec<pb::RecordState> {
    s.wait_until(
        "the records to show rejected",
        Duration::from_secs(30),
        |s| {
            let st = s.record_states(false);
            let rejected = |r: &pb::RecordState| r.state == RecordStateKind::Rejected as i32;
            (st.len() == n && st.iter().all(rejected)).then_some(st)
        },
    )
}
