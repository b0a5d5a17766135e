//! Issue 28, items 3 to 5: what the adversarial re-run still broke on the way from a
//! desired state to deletions. Planner and applier run as processes in front of a real
//! PowerDNS; what the zone holds is read from PowerDNS itself (AXFR).
//!
//! - a withdrawn push writes no more than what had already gone out, and the records
//!   nobody wanted go again without anyone approving it;
//! - the guard remembers: a source shrinking in slices, each under the threshold, is
//!   held once the slices add up past it;
//! - a typo in the domain of a name (a name in no configured zone) deletes nothing: the
//!   object keeps its last accepted version, and the error names the nearest zone.
use crate::safety::{
    WAIT, manifest, names, owned_names, push_a, set, stack_with_files, start_pdns, wait_owned,
};
use dnsplane_common::pb;
use dnsplane_e2e::servers::stack::{Options, RealStack};
use std::collections::BTreeSet;
use std::time::Duration;

/// Changes per batch in the withdrawn-push test: with one provider write a second,
/// 400 records take 20 batches, long enough to withdraw them in the middle.
const BATCH: usize = 20;

fn pushed_count(s: &RealStack) -> usize {
    owned_names(s).iter().filter(|n| n.starts_with('p')).count()
}

#[test]
fn a_withdrawn_push_writes_only_what_had_gone_out() {
    let Some((server, tools, src)) = start_pdns() else {
        return;
    };
    let zone = server.zone().clone();
    let file = src.path().join("base.yaml");
    let base = names("b", 100);
    std::fs::write(&file, manifest(&zone, "base", &base)).unwrap();
    let s = RealStack::start(
        server,
        tools,
        Options {
            batch_max_changes: BATCH,
            // The provider account writes once a second: a sync of 400 records takes
            // about 20 s.
            account_extra: "[accounts.quota]\nrate = 1.0\nburst = 1\n".into(),
            // Room for what had gone out when the push was withdrawn (at most a few
            // batches of 20 beside 100 records), not for the whole push (400).
            planner_extra: format!(
                "[[sources]]\ntype = \"file\"\npaths = [{:?}]\n\n[safety]\nmax_change_fraction = 0.5\n",
                file.display().to_string()
            ),
            ..Options::default()
        },
    );
    wait_owned(&s, &set(&base));

    let pushed = names("p", 400);
    assert_eq!(push_a(&s, &pushed, "192.0.2.77"), 400);
    s.wait_until("the first pushed records to be written", WAIT, |s| {
        (pushed_count(s) > 0).then_some(())
    });
    // Withdrawn: the same source, now empty. Acknowledged like any push.
    assert_eq!(s.push(Vec::new()), 0);
    let at_withdrawal = pushed_count(&s);

    // What had gone out is written and then deleted again; nothing more is sent, and
    // nobody has to approve deleting records nobody wanted.
    let mut most = at_withdrawal;
    s.wait_until("the zone to hold only the base records again", WAIT, |s| {
        let owned = owned_names(s);
        most = most.max(owned.iter().filter(|n| n.starts_with('p')).count());
        let (z, _) = s.zone_status();
        assert!(
            z.held.is_none(),
            "the removal of withdrawn records was held: {z:?}"
        );
        (owned == set(&base)).then_some(())
    });
    assert!(
        most <= at_withdrawal + 3 * BATCH,
        "{most} pushed records were written, {at_withdrawal} when the push was withdrawn (at most {} more were on their way)",
        3 * BATCH
    );
    let (z, _) = s.zone_status();
    assert_eq!(z.records_by_state.get("held"), None, "{z:?}");
}

#[test]
fn a_source_shrinking_in_slices_is_held_once_they_add_up_past_the_threshold() {
    let Some((server, tools, src)) = start_pdns() else {
        return;
    };
    let zone = server.zone().clone();
    let desired = src.path().join("desired");
    std::fs::create_dir(&desired).unwrap();
    let other = names("o", 12);
    std::fs::write(desired.join("other.yaml"), manifest(&zone, "other", &other)).unwrap();
    let web = names("w", 30);
    let write_web = |n: usize| {
        std::fs::write(desired.join("web.yaml"), manifest(&zone, "web", &web[..n])).unwrap();
    };
    write_web(30);
    let s = stack_with_files(server, tools, &[&desired], "");
    let with =
        |n: usize| -> BTreeSet<String> { set(&other).union(&set(&web[..n])).cloned().collect() };
    wait_owned(&s, &with(30));

    // 42 → 34: 8 deletes (19 %), let through, and remembered.
    write_web(22);
    wait_owned(&s, &with(22));
    let (z, _) = s.zone_status();
    assert_eq!(z.guard_window_changes, 8, "{z:?}");

    // 34 → 26 a few seconds later: another 8 (24 % of what is left, but 16 of the 42
    // owned when the window began: 38 %). Held.
    std::thread::sleep(Duration::from_secs(3));
    write_web(14);
    let held = s.wait_until("the second slice to be held", WAIT, |s| {
        s.zone_status().0.held
    });
    assert_eq!(held.deletes, 8, "{held:?}");
    assert_eq!(owned_names(&s), with(22), "the second slice was deleted");

    // 26 → 19: the held plan grows; still nothing deleted.
    std::thread::sleep(Duration::from_secs(3));
    write_web(7);
    let held = s.wait_until("the grown plan to be held", WAIT, |s| {
        s.zone_status().0.held.filter(|h| h.deletes == 15)
    });
    assert_eq!(s.sync(true).phase, "done");
    assert_eq!(owned_names(&s), with(22), "slices added up past 30 %");
    let (code, out) = s.cli(&["status"]);
    assert_eq!(code, 2, "{out}");

    // Approving applies it, and starts the window afresh.
    let (code, out) = s.cli(&["approve", &zone.to_string(), "--digest", &held.digest]);
    assert_eq!(code, 0, "{out}");
    wait_owned(&s, &with(7));
    let (z, _) = s.zone_status();
    assert!(z.held.is_none(), "{z:?}");
    assert_eq!(z.guard_window_changes, 0, "{z:?}");
}

#[test]
fn a_typo_in_the_domain_of_a_name_deletes_nothing() {
    let Some((server, tools, src)) = start_pdns() else {
        return;
    };
    let zone = server.zone().clone();
    let apex = zone.to_string().trim_end_matches('.').to_string();
    // `pdns.test` → `pdns.tset`: two letters swapped, the typo of the report.
    let typo = apex.replace(".test", ".tset");
    assert_ne!(typo, apex);
    let file = src.path().join("web.yaml");
    let mut all = names("w", 11);
    all.push("www".into());
    let good = manifest(&zone, "web", &all);
    std::fs::write(&file, &good).unwrap();
    let s = stack_with_files(server, tools, &[&file], "");
    wait_owned(&s, &set(&all));

    let bad = good.replace(
        &format!("dnsName: www.{zone}"),
        &format!("dnsName: www.{typo}"),
    );
    assert_ne!(bad, good, "the manifest names www.{zone}");
    std::fs::write(&file, &bad).unwrap();
    let error = s.wait_until("the source to report the typo", WAIT, |s| {
        s.planner_status().source_errors.into_iter().find(|e| {
            e.record.contains(&format!("www.{typo}")) || e.message.contains(&format!("www.{typo}"))
        })
    });
    assert!(
        error.message.contains(&format!("did you mean {apex}?")),
        "{error:?}"
    );
    assert!(error.location.contains("web.yaml"), "{error:?}");
    // A full fresh sync plans from what is in force: www is still desired.
    assert_eq!(s.sync(true).phase, "done");
    assert_eq!(owned_names(&s), set(&all), "a typo in a domain deleted www");
    let (code, out) = s.cli(&["status"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(&format!("www.{typo}")), "{out}");

    // A push with the same typo is refused whole, naming the field and the zone.
    let rt = crate::stack::runtime();
    let e = rt
        .block_on(async {
            let mut c = pb::planner_client::PlannerClient::connect(format!(
                "http://127.0.0.1:{}",
                s.planner_port
            ))
            .await
            .expect("connect to the planner");
            c.put_desired(pb::PutDesiredRequest {
                source: "app".into(),
                records: vec![pb::DesiredRecord {
                    name: format!("api.{typo}"),
                    r#type: "A".into(),
                    ttl: 300,
                    values: vec!["192.0.2.1".into()],
                    ..Default::default()
                }],
            })
            .await
        })
        .expect_err("a name in no zone");
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().starts_with("records[0]")
            && e.message().contains(&format!("api.{typo}"))
            && e.message().contains(&format!("did you mean {apex}?")),
        "{e:?}"
    );
}
