//! Compiles `proto/` with protox (pure Rust), so no system `protoc` is needed, and
//! generates serde impls in the proto3 JSON mapping with pbjson-build (`/status`).
use prost::Message;
use std::path::PathBuf;

/// The well-known types the contract uses, as `crate::wkt` holds them (for their serde
/// impls; `common/src/wkt.rs` says why not `prost-types`' or `pbjson-types`').
const WELL_KNOWN: [(&str, &str); 2] = [
    (".google.protobuf.Timestamp", "crate::wkt::Timestamp"),
    (".google.protobuf.Duration", "crate::wkt::Duration"),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proto");
    let files = ["records.proto", "applier.proto", "planner.proto"]
        .map(|f| root.join("dnsplane/v1").join(f));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let fds = protox::compile(files, [&root])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = fds.encode_to_vec();
    std::fs::write(out.join("dnsplane_descriptor.bin"), &descriptors)?;
    let mut prost = tonic_prost_build::configure()
        .build_client(true)
        .build_server(true);
    for (proto, rust) in WELL_KNOWN {
        prost = prost.extern_path(proto, rust);
    }
    prost.compile_fds(fds)?;
    // `emit_fields`: default values written out too (0, "", false, [], {}), so that a
    // reader of `/status` finds every field; the JSON names stay lowerCamelCase as in
    // the proto3 mapping and grpcurl (no `preserve_proto_field_names`).
    let mut json = pbjson_build::Builder::new();
    json.register_descriptors(&descriptors)?.emit_fields();
    for (proto, rust) in WELL_KNOWN {
        json.extern_path(proto, rust);
    }
    json.build(&[".dnsplane.v1"])?;
    Ok(())
}
