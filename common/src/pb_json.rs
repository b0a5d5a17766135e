//! Tests of the proto3 JSON that `/status` serves ([`crate::metrics::proto_json`] over
//! pbjson's generated impls), against the contract's own descriptors: each status
//! message is built from its descriptor with every field set
//! ([`dnsplane_testing::proto_json`], so a field added to the proto later is in it
//! without touching this file), and must come out as `grpcurl` prints it, every field
//! under its JSON name, and read back equal; an empty one must write out every
//! default. (`tests/e2e/status_json.rs` checks the same against the real `grpcurl`.)
use crate::metrics::proto_json;
use crate::pb;
use dnsplane_testing::proto_json::{defaults, populated};
use prost::Message;
use serde_json::json;

/// `M` (the message `full`) with every field set comes out as grpcurl prints it and
/// reads back equal; empty, it writes out every default.
fn check<M>(full: &str)
where
    M: Message
        + Default
        + PartialEq
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let (wire, want) = populated(pb::FILE_DESCRIPTOR_SET, full);
    let message = M::decode(wire.as_slice()).expect("the populated message decodes");
    let got = proto_json(&message);
    assert_eq!(
        got, want,
        "{full}: /status JSON vs the descriptors' proto3 JSON"
    );
    let back: M = serde_json::from_value(got).expect("the JSON reads back");
    assert_eq!(back, message, "{full}: read back");
    assert_eq!(
        proto_json(&M::default()),
        defaults(pb::FILE_DESCRIPTOR_SET, full),
        "{full} empty"
    );
}

#[test]
fn planner_status_json_has_every_field_as_grpcurl_prints_it() {
    check::<pb::PlannerStatus>(".dnsplane.v1.PlannerStatus");
}

#[test]
fn applier_status_json_has_every_field_as_grpcurl_prints_it() {
    check::<pb::ApplierStatus>(".dnsplane.v1.ApplierStatus");
}

#[test]
fn the_populated_planner_status_reaches_the_nested_messages() {
    // The test above is only as good as the message it builds: the deepest fields
    // are there with their spelling.
    let (_, json) = populated(pb::FILE_DESCRIPTOR_SET, ".dnsplane.v1.PlannerStatus");
    let zone = &json["zones"][0];
    assert_eq!(zone["recordsByState"], json!({ "x": 1 }));
    assert_eq!(zone["lastSync"], "1970-01-01T00:00:01Z");
    assert_eq!(zone["held"]["ownedRecords"], 1);
    assert_eq!(
        json["appliers"][0]["accounts"][0]["quota"]["waitTotal"],
        "1s"
    );
    assert_eq!(json["appliers"][0]["accounts"][0]["quota"]["granted"], "1");
    assert_eq!(json["lease"]["epoch"], "1");
}
