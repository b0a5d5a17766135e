//! The Redis push store ([`dnsplane_planner::redis_store`]) against a real Redis: a
//! push replaces a source, a patch touches only its fields, and every write is fenced
//! by the lease: a planner that does not hold it (any more) writes nothing.
use dnsplane_e2e::redis::Redis;
use dnsplane_planner::lease::{Acquire, LeaseBackend, RedisBackend};
use dnsplane_planner::redis_store::{RedisStore, Writer};
use dnsplane_planner::store::StoreError;
use std::time::Duration;

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect()
}

#[test]
fn pushes_and_patches_are_stored_and_fenced_by_the_lease() {
    let Some(redis) = Redis::start() else { return };
    crate::stack::runtime().block_on(async {
        let timeout = Duration::from_secs(2);
        let lease = RedisBackend::new(&redis.url(), "e2e-store", timeout).expect("lease");
        let store = RedisStore::new(&redis.url(), "e2e-store", timeout).expect("store");
        let ttl = Duration::from_millis(500);
        let epoch = match lease.try_acquire("a", ttl).await.expect("acquire") {
            Acquire::Acquired { epoch } => epoch,
            other => panic!("{other:?}"),
        };
        let a = Writer { holder: "a", epoch };
        // Nothing yet: not imported, no sources.
        assert!(!store.imported().await.unwrap());
        assert!(store.read_all().await.unwrap().is_empty());

        let n = store
            .put(
                a,
                "push:app",
                &pairs(&[("k1", "v1"), ("k2", "v2"), ("k3", "v3")]),
            )
            .await
            .unwrap();
        assert_eq!(n, 3);
        // A push replaces the source whole.
        store
            .put(a, "push:app", &pairs(&[("k1", "v1"), ("k2", "v2b")]))
            .await
            .unwrap();
        // A patch sets and deletes its fields only.
        let n = store
            .patch(a, "push:app", &pairs(&[("k4", "v4")]), &["k1".to_string()])
            .await
            .unwrap();
        assert_eq!(n, 2);
        // An empty push is a source that desires nothing, not an absent one.
        store.put(a, "push:empty", &[]).await.unwrap();
        assert_eq!(
            store.read_all().await.unwrap(),
            vec![
                (
                    "push:app".to_string(),
                    pairs(&[("k2", "v2b"), ("k4", "v4")])
                ),
                ("push:empty".to_string(), vec![]),
            ]
        );
        // Sources exist now: nothing would be imported.
        assert!(store.imported().await.unwrap());

        // Another holder, or an old epoch, writes nothing.
        let wrong = Writer { holder: "b", epoch };
        let e = store
            .patch(wrong, "push:app", &pairs(&[("k9", "x")]), &[])
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
        assert!(e.to_string().contains("held by a"), "{e}");
        // a's lease lapses and b takes it: a is deposed, its writes are refused.
        tokio::time::sleep(ttl * 2).await;
        let b_epoch = match lease.try_acquire("b", ttl).await.expect("acquire") {
            Acquire::Acquired { epoch } => epoch,
            other => panic!("{other:?}"),
        };
        assert!(b_epoch > epoch);
        let e = store
            .put(a, "push:app", &pairs(&[("k1", "stale")]))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
        let b = Writer {
            holder: "b",
            epoch: b_epoch,
        };
        store
            .patch(b, "push:app", &pairs(&[("k5", "v5")]), &[])
            .await
            .unwrap();
        let all = store.read_all().await.unwrap();
        assert_eq!(
            all[0].1,
            pairs(&[("k2", "v2b"), ("k4", "v4"), ("k5", "v5")]),
            "a's stale writes left nothing"
        );
        store.mark_imported().await.unwrap();
        assert!(store.imported().await.unwrap());
    });
}

#[test]
fn an_unreachable_redis_is_an_error_naming_it_never_an_empty_store() {
    let Some(mut redis) = Redis::start() else {
        return;
    };
    let url = redis.url();
    redis.stop();
    crate::stack::runtime().block_on(async {
        let store = RedisStore::new(&url, "e2e-down", Duration::from_millis(500)).expect("store");
        let e = store.read_all().await.unwrap_err();
        assert!(matches!(e, StoreError::Redis { .. }), "{e}");
        assert!(e.to_string().contains(&format!(":{}", redis.port)), "{e}");
    });
}
