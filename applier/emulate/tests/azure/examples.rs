//! The API description's examples, replayed.
use super::*;

/// Where the emulator's answer differs from a documented one: every field the example
/// shows must be there with the same value, but for `etag` (any GUID), `id` and `type`
/// (ARM's resource-type segment in any case; live answers write `dnszones`) and
/// `fqdn` (with or without the trailing dot: the public examples drop it, the
/// private ones and live answers keep it).
fn differences(ours: &Value, doc: &Value, at: &str, out: &mut Vec<String>) {
    match (ours, doc) {
        (Value::Object(o), Value::Object(d)) => {
            for (k, dv) in d {
                let here = format!("{at}.{k}");
                match o.get(k) {
                    None => out.push(format!("{here} missing")),
                    Some(ov) => match (k.as_str(), ov.as_str(), dv.as_str()) {
                        ("etag", Some(e), Some(_)) if e.len() == 36 => {}
                        ("id" | "type", Some(a), Some(b)) if a.eq_ignore_ascii_case(b) => {}
                        ("fqdn", Some(a), Some(b))
                            if a.trim_end_matches('.') == b.trim_end_matches('.') => {}
                        _ => differences(ov, dv, &here, out),
                    },
                }
            }
        }
        (Value::Array(o), Value::Array(d)) if o.len() == d.len() => {
            for (i, (ov, dv)) in o.iter().zip(d).enumerate() {
                differences(ov, dv, &format!("{at}[{i}]"), out);
            }
        }
        (o, d) if o == d => {}
        (o, d) => out.push(format!("{at}: {o} where the example has {d}")),
    }
}

#[tokio::test]
async fn the_api_descriptions_examples_are_answered_as_described() {
    let emu = start(unthrottled()).await;
    emu.create_zone_in("zone1", false, "subid", "rg1");
    emu.create_zone_in("privatezone1.com", true, "subscriptionId", "resourceGroup1");
    let c = Client::new(&emu);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/azure");
    for file in [
        "CreateOrUpdateSRVRecordset.json",
        "CreateOrUpdateCaaRecordset.json",
        "RecordSetMXPut.json",
    ] {
        let ex: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
        let p = &ex["parameters"];
        let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
        let (provider, zone) = match p.get("privateZoneName") {
            Some(z) => ("privateDnsZones", z.as_str().unwrap().to_string()),
            None => ("dnsZones", s("zoneName")),
        };
        let path = format!(
            "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network/{provider}/{zone}/{}/{}?api-version={}",
            s("subscriptionId"),
            s("resourceGroupName"),
            s("recordType"),
            s("relativeRecordSetName"),
            s("api-version"),
        );
        let created = c.put(&path, p["parameters"].clone()).await;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{file}: {}",
            created.body
        );
        let mut diff = vec![];
        differences(
            &created.body,
            &ex["responses"]["201"]["body"],
            "",
            &mut diff,
        );
        assert!(diff.is_empty(), "{file} (201):\n{}", diff.join("\n"));
        let again = c.put(&path, p["parameters"].clone()).await;
        assert_eq!(again.status, StatusCode::OK, "{file}: {}", again.body);
        let mut diff = vec![];
        differences(&again.body, &ex["responses"]["200"]["body"], "", &mut diff);
        assert!(diff.is_empty(), "{file} (200):\n{}", diff.join("\n"));
    }
    emu.stop().await;
}
