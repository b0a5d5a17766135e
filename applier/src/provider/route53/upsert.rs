//! Servers that check a batch's CREATEs against the zone as it was before the batch.
//!
//! AWS validates and applies a change batch in order, all or nothing: a DELETE of a
//! set then a CREATE of it is how this driver writes an update (and asserts that an
//! unchanged ownership record still holds), and AWS's own API reference deletes and
//! creates one name in one batch. moto (and so LocalStack, which serves Route 53
//! through moto) checks each CREATE against the zone before the batch instead, and
//! refuses such a CREATE with `InvalidChangeBatch … but it already exists` when it took
//! an identical CREATE before: an unchanged ownership record, a value changed back.
//!
//! AWS never answers "already exists" for a CREATE that follows the DELETE of the same
//! set in the batch (the DELETE either removed it or failed first). So such an answer
//! names the server's behaviour, not the zone: the driver logs it once, and from then
//! on sends UPSERT for a CREATE that follows the DELETE of its set. Nothing is lost:
//! the DELETE still checks the set exactly, and after it the set is absent, where
//! UPSERT and CREATE do the same. A CREATE alone stays a CREATE everywhere.
use super::wire::{self, Action, OutChange};
use dnsplane_common::{Name, RecordKey, RecordType};
use std::sync::atomic::{AtomicBool, Ordering};

/// The account status note once the fallback is on.
pub const NOTE: &str = "this Route 53 endpoint checks each CREATE against the zone as it was before the batch (moto, LocalStack; AWS applies a batch in order): a CREATE that follows its set's DELETE is sent as UPSERT, and a CREATE refused as existing that a read finds absent is sent again as UPSERT";

/// Whether this account's server checks CREATEs before the batch (learnt once).
#[derive(Debug, Default)]
pub struct UpsertFallback(AtomicBool);

impl UpsertFallback {
    /// Whether the server was seen refusing a CREATE after the DELETE of its set.
    pub fn on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Turns the fallback on; `true` the first time (to log it once).
    pub fn learn(&self) -> bool {
        !self.0.swap(true, Ordering::Relaxed)
    }
}

/// Whether `key`'s set is deleted earlier in `changes` than position `at`.
fn deleted_before(changes: &[OutChange<'_>], at: usize, key: &RecordKey) -> bool {
    changes[..at]
        .iter()
        .any(|c| c.action == Action::Delete && c.key == key)
}

/// UPSERT for every CREATE that follows the DELETE of its own set.
pub fn upsert_after_delete(changes: &mut [OutChange<'_>]) {
    for i in 0..changes.len() {
        if changes[i].action == Action::Create && deleted_before(changes, i, changes[i].key) {
            changes[i].action = Action::Upsert;
        }
    }
}

/// Whether an error answer to `changes` is the server checking CREATEs before the
/// batch: `InvalidChangeBatch` whose every failure is "already exists" for a set this
/// batch DELETEs before it CREATEs. (moto names no set identifier: name and type are
/// compared.)
pub fn refused_in_order(zone: &Name, changes: &[OutChange<'_>], body: &str) -> bool {
    let err = wire::parse_error(body);
    if err.code != "InvalidChangeBatch" {
        return false;
    }
    let failures = wire::failures(zone, &err);
    !failures.is_empty()
        && failures.iter().all(|f| {
            f.text.contains("but it already exists")
                && f.key.as_ref().is_some_and(|k| {
                    changes.iter().enumerate().any(|(i, c)| {
                        c.action == Action::Create
                            && c.key.name == k.name
                            && c.key.rtype == k.rtype
                            && deleted_before(changes, i, c.key)
                    })
                })
        })
}

/// The sets of the CREATEs an error answer refused as existing (name and type; moto
/// names no set identifier), when every failure is one: `InvalidChangeBatch … but it
/// already exists`. Empty for any other answer.
///
/// moto also checks a lone CREATE against record sets it held before: a set deleted
/// and created again as it was is refused while another set follows it in the zone.
/// AWS refuses such a CREATE only when the set exists, so on an account that has seen
/// its server check CREATEs before the batch, the caller reads the batch's sets back
/// and, when none it was refused is there, sends the batch again with the CREATEs of
/// absent sets as UPSERT: the read is the "absent" precondition, as it is for
/// Cloudflare's writes. (Not before: against AWS that read would be one more request
/// for every conflict.)
pub fn refused_creates(
    zone: &Name,
    changes: &[OutChange<'_>],
    body: &str,
) -> Vec<(Name, RecordType)> {
    let err = wire::parse_error(body);
    if err.code != "InvalidChangeBatch" {
        return Vec::new();
    }
    let failures = wire::failures(zone, &err);
    let mut refused = Vec::new();
    for f in &failures {
        let created = f.text.contains("but it already exists")
            && f.key.as_ref().is_some_and(|k| {
                changes.iter().any(|c| {
                    c.action == Action::Create && c.key.name == k.name && c.key.rtype == k.rtype
                })
            });
        match (&f.key, created) {
            (Some(k), true) => refused.push((k.name.clone(), k.rtype)),
            _ => return Vec::new(),
        }
    }
    refused
}

/// UPSERT for the CREATEs of `sets` (name and type).
pub fn upsert_creates(changes: &mut [OutChange<'_>], sets: &[(Name, RecordType)]) {
    for c in changes.iter_mut() {
        if c.action == Action::Create
            && sets
                .iter()
                .any(|(n, t)| *n == c.key.name && *t == c.key.rtype)
        {
            c.action = Action::Upsert;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::route53::wire::SetBody;

    fn key(label: &str) -> RecordKey {
        let zone = Name::parse("example.com").unwrap();
        RecordKey::new(zone.clone(), zone.prepend(label).unwrap(), RecordType::Txt)
    }

    fn change(action: Action, key: &RecordKey) -> OutChange<'_> {
        OutChange {
            action,
            key,
            body: SetBody::default(),
        }
    }

    fn moto_refusal(name: &str) -> String {
        format!(
            r#"<ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><Error><Type>Sender</Type><Code>InvalidChangeBatch</Code><Message>Tried to create resource record set [name='{name}', type='TXT'] but it already exists</Message></Error><RequestId>r</RequestId></ErrorResponse>"#
        )
    }

    #[test]
    fn only_a_create_after_the_delete_of_its_set_is_the_servers_order() {
        let zone = Name::parse("example.com").unwrap();
        let (mark, fresh) = (key("_dnsplane-a.www"), key("new"));
        let batch = [
            change(Action::Delete, &mark),
            change(Action::Create, &mark),
            change(Action::Create, &fresh),
        ];
        assert!(refused_in_order(
            &zone,
            &batch,
            &moto_refusal("_dnsplane-a.www.example.com.")
        ));
        // A CREATE alone that finds its set: the zone holds it (a conflict).
        assert!(!refused_in_order(
            &zone,
            &batch,
            &moto_refusal("new.example.com.")
        ));
        // Another refusal of the batch.
        let other = moto_refusal("_dnsplane-a.www.example.com.")
            .replace("but it already exists", "but it was not found");
        assert!(!refused_in_order(&zone, &batch, &other));
        let throttled = r#"<ErrorResponse><Error><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>"#;
        assert!(!refused_in_order(&zone, &batch, throttled));
    }

    #[test]
    fn upsert_replaces_only_a_create_after_a_delete_of_its_set() {
        let (mark, fresh) = (key("_dnsplane-a.www"), key("new"));
        let mut batch = [
            change(Action::Delete, &mark),
            change(Action::Create, &mark),
            change(Action::Create, &fresh),
            change(Action::Delete, &fresh),
        ];
        upsert_after_delete(&mut batch);
        let actions: Vec<Action> = batch.iter().map(|c| c.action).collect();
        assert_eq!(
            actions,
            [
                Action::Delete,
                Action::Upsert,
                Action::Create,
                Action::Delete
            ]
        );
    }

    #[test]
    fn the_fallback_is_learnt_once() {
        let f = UpsertFallback::default();
        assert!(!f.on());
        assert!(f.learn());
        assert!(!f.learn());
        assert!(f.on());
    }

    #[test]
    fn refused_creates_names_only_answers_that_refuse_creates() {
        let zone = Name::parse("example.com").unwrap();
        let (mark, other) = (key("_dnsplane-a.www"), key("other"));
        let batch = [
            change(Action::Create, &mark),
            change(Action::Delete, &other),
        ];
        assert_eq!(
            refused_creates(&zone, &batch, &moto_refusal("_dnsplane-a.www.example.com.")),
            [(mark.name.clone(), RecordType::Txt)]
        );
        // A set the batch does not CREATE, or another error: not this case.
        assert!(refused_creates(&zone, &batch, &moto_refusal("other.example.com.")).is_empty());
        let throttled = r#"<ErrorResponse><Error><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>"#;
        assert!(refused_creates(&zone, &batch, throttled).is_empty());
        let mut changes = batch;
        upsert_creates(&mut changes, &[(mark.name.clone(), RecordType::Txt)]);
        assert_eq!(
            changes.iter().map(|c| c.action).collect::<Vec<_>>(),
            [Action::Upsert, Action::Delete]
        );
    }
}
