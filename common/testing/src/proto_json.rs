//! Messages built from a descriptor set alone, with every field set, and the proto3
//! JSON that `grpcurl` prints for them: so that a test of generated JSON code (the
//! admin ports' `/status`) covers a field added to a `.proto` later without being
//! touched. Wire bytes and JSON only, no generated type: any crate's tests can decode
//! the bytes into their own `pb` types.
use prost::Message;
use prost::bytes::BufMut;
use prost::encoding::{WireType, encode_key, encode_varint};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use serde_json::{Map, Value, json};

/// The wire bytes of the message `full` (`.dnsplane.v1.PlannerStatus`) of the encoded
/// `descriptors` with every field set (one element in each repeated field and map, the
/// first member of each oneof; numbers 1 or 1.5, strings `"x"`, timestamps 1 s after
/// the epoch, durations 1 s), and the JSON `grpcurl` prints for it.
pub fn populated(descriptors: &[u8], full: &str) -> (Vec<u8>, Value) {
    Contract::load(descriptors).populated(full, 0)
}

/// The JSON of an empty message `full` with default values written out (zero, `"0"`
/// for 64-bit integers, `""`, `false`, `[]`, `{}`, an enum's first name) and message
/// fields left out.
pub fn defaults(descriptors: &[u8], full: &str) -> Value {
    Contract::load(descriptors).defaults(full)
}

/// The contract's descriptors, looked up by full name (`.dnsplane.v1.ZoneStatus`).
struct Contract(FileDescriptorSet);

impl Contract {
    fn load(descriptors: &[u8]) -> Contract {
        Contract(FileDescriptorSet::decode(descriptors).expect("an encoded FileDescriptorSet"))
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

    /// [`populated`], `depth` messages down.
    fn populated(&self, full: &str, depth: usize) -> (Vec<u8>, Value) {
        assert!(depth < 16, "{full}: a recursive message cannot be filled");
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

    /// [`defaults`].
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
