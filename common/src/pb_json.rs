//! Tests of the proto3 JSON that `/status` serves ([`crate::metrics::proto_json`] over
//! pbjson's generated impls), against the contract's own descriptors: each status
//! message is built from its descriptor with every field set (so a field added to the
//! proto later is in it without touching this file), and must come out as `grpcurl`
//! prints it, every field under its JSON name, and read back equal; an empty one must
//! write out every default.
use crate::metrics::proto_json;
use crate::pb;
use prost::Message;
use prost::bytes::BufMut;
use prost::encoding::{WireType, encode_key, encode_varint};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use serde_json::{Map, Value, json};

/// The contract's descriptors, looked up by full name (`.dnsplane.v1.ZoneStatus`).
struct Contract(FileDescriptorSet);

impl Contract {
    fn load() -> Contract {
        Contract(FileDescriptorSet::decode(pb::FILE_DESCRIPTOR_SET).expect("descriptors"))
    }

    fn message(&self, full: &str) -> &DescriptorProto {
        fn find<'a>(
            prefix: &str,
            ms: &'a [DescriptorProto],
            full: &str,
        ) -> Option<&'a DescriptorProto> {
            ms.iter().find_map(|m| {
                let name = format!("{prefix}.{}", m.name());
                if name == full {
                    Some(m)
                } else {
                    find(&name, &m.nested_type, full)
                }
            })
        }
        self.0
            .file
            .iter()
            .find_map(|f| find(&format!(".{}", f.package()), &f.message_type, full))
            .unwrap_or_else(|| panic!("no message {full} in the descriptors"))
    }

    fn enumeration(&self, full: &str) -> &EnumDescriptorProto {
        let found = self.0.file.iter().find_map(|f| {
            let top = f
                .enum_type
                .iter()
                .map(|e| (format!(".{}.{}", f.package(), e.name()), e));
            let nested = f.message_type.iter().flat_map(|m| {
                m.enum_type
                    .iter()
                    .map(move |e| (format!(".{}.{}.{}", f.package(), m.name(), e.name()), e))
            });
            top.chain(nested).find(|(n, _)| n == full).map(|(_, e)| e)
        });
        found.unwrap_or_else(|| panic!("no enum {full} in the descriptors"))
    }

    /// The wire bytes of a `full` message with every field set (one element in each
    /// repeated field and map, the first member of each oneof), and the JSON
    /// `grpcurl` prints for it.
    fn populated(&self, full: &str, depth: usize) -> (Vec<u8>, Value) {
        assert!(depth < 16, "{full}: the status messages are not recursive");
        let (mut wire, mut json) = (Vec::new(), Map::new());
        let mut oneofs_set = Vec::new();
        for f in &self.message(full).field {
            if let Some(i) = f.oneof_index.filter(|_| !f.proto3_optional()) {
                if oneofs_set.contains(&i) {
                    continue;
                }
                oneofs_set.push(i);
            }
            let (wire_type, bytes, value) = self.one(f, depth);
            encode_key(f.number() as u32, wire_type, &mut wire);
            wire.extend(bytes);
            let value = match f.label() {
                Label::Repeated if self.is_map(f) => {
                    let key = match &value["key"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    json!({ key: value["value"].clone() })
                }
                Label::Repeated => json!([value]),
                _ => value,
            };
            json.insert(json_name(f), value);
        }
        (wire, Value::Object(json))
    }

    /// One value of field `f`: its wire type, its encoding after the key, its JSON.
    fn one(&self, f: &FieldDescriptorProto, depth: usize) -> (WireType, Vec<u8>, Value) {
        let varint = |v: u64| {
            let mut b = Vec::new();
            encode_varint(v, &mut b);
            (WireType::Varint, b)
        };
        let (wire_type, bytes) = match f.r#type() {
            Type::Double => (WireType::SixtyFourBit, 1.5f64.to_le_bytes().to_vec()),
            Type::Float => (WireType::ThirtyTwoBit, 1.5f32.to_le_bytes().to_vec()),
            Type::Fixed64 | Type::Sfixed64 => (WireType::SixtyFourBit, 1u64.to_le_bytes().to_vec()),
            Type::Fixed32 | Type::Sfixed32 => (WireType::ThirtyTwoBit, 1u32.to_le_bytes().to_vec()),
            // zigzag: 2 is 1
            Type::Sint32 | Type::Sint64 => varint(2),
            Type::Int32 | Type::Int64 | Type::Uint32 | Type::Uint64 | Type::Bool | Type::Enum => {
                varint(1)
            }
            Type::String => delimited(b"x"),
            Type::Bytes => delimited(&[1, 2, 3]),
            Type::Message => {
                let (inner, value) = match f.type_name() {
                    // 1 s after the epoch; 1 s.
                    ".google.protobuf.Timestamp" => (vec![8, 1], json!("1970-01-01T00:00:01Z")),
                    ".google.protobuf.Duration" => (vec![8, 1], json!("1s")),
                    name => self.populated(name, depth + 1),
                };
                let (wire_type, bytes) = delimited(&inner);
                return (wire_type, bytes, value);
            }
            Type::Group => panic!("{}: groups are proto2", f.name()),
        };
        let value = match f.r#type() {
            Type::Double | Type::Float => json!(1.5),
            Type::Int64 | Type::Uint64 | Type::Sint64 | Type::Fixed64 | Type::Sfixed64 => {
                json!("1")
            }
            Type::Bool => json!(true),
            Type::String => json!("x"),
            Type::Bytes => json!("AQID"),
            Type::Enum => json!(self.enum_name(f.type_name(), 1)),
            _ => json!(1),
        };
        (wire_type, bytes, value)
    }

    /// The JSON of an empty `full` message with default values written out: zero,
    /// `"0"` for 64-bit integers, `""`, `false`, `[]`, `{}`, an enum's first name;
    /// message fields left out.
    fn defaults(&self, full: &str) -> Value {
        let mut json = Map::new();
        for f in &self.message(full).field {
            let value = match (f.label(), f.r#type()) {
                (_, _) if f.oneof_index.is_some() => continue,
                (Label::Repeated, _) if self.is_map(f) => json!({}),
                (Label::Repeated, _) => json!([]),
                (_, Type::Message) => continue,
                (_, Type::Double | Type::Float) => json!(0.0),
                (_, Type::Int64 | Type::Uint64 | Type::Sint64 | Type::Fixed64 | Type::Sfixed64) => {
                    json!("0")
                }
                (_, Type::Bool) => json!(false),
                (_, Type::String | Type::Bytes) => json!(""),
                (_, Type::Enum) => json!(self.enum_name(f.type_name(), 0)),
                _ => json!(0),
            };
            json.insert(json_name(f), value);
        }
        Value::Object(json)
    }

    fn is_map(&self, f: &FieldDescriptorProto) -> bool {
        f.r#type() == Type::Message
            && self
                .message(f.type_name())
                .options
                .as_ref()
                .is_some_and(|o| o.map_entry())
    }

    fn enum_name(&self, full: &str, number: i32) -> String {
        let e = self.enumeration(full);
        let v = e.value.iter().find(|v| v.number() == number);
        v.unwrap_or_else(|| panic!("{full} has no value {number}"))
            .name()
            .to_string()
    }
}

/// The field's JSON name as the descriptor has it (lowerCamelCase of the proto name).
fn json_name(f: &FieldDescriptorProto) -> String {
    f.json_name
        .clone()
        .unwrap_or_else(|| panic!("{}: no json_name in the descriptor", f.name()))
}

fn delimited(b: &[u8]) -> (WireType, Vec<u8>) {
    let mut out = Vec::new();
    encode_varint(b.len() as u64, &mut out);
    out.put_slice(b);
    (WireType::LengthDelimited, out)
}

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
    let contract = Contract::load();
    let (wire, want) = contract.populated(full, 0);
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
        contract.defaults(full),
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
    let (_, json) = Contract::load().populated(".dnsplane.v1.PlannerStatus", 0);
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
