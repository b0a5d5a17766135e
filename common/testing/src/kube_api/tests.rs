//! The fake as kube-rs (the planner's client) sees it.
use super::*;
use futures::{StreamExt, TryStreamExt};

use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use std::time::Duration;

fn ar(r: Resource) -> ApiResource {
    let i = r.info();
    ApiResource {
        group: i.group.into(),
        version: i.version.into(),
        api_version: r.api_version(),
        kind: i.kind.into(),
        plural: i.plural.into(),
    }
}

async fn client(api: &FakeKubeApi) -> kube::Client {
    let config = kube::Config::new(api.url().parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

fn service(ns: &str, name: &str, app: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app},
                     "annotations": {"external-dns.alpha.kubernetes.io/hostname": format!("{name}.example.com")}},
        "spec": {"type": "LoadBalancer", "selector": {"app": app}, "clusterIP": "10.96.0.10",
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]},
        "status": {"loadBalancer": {"ingress": [{"ip": ip}]}},
    })
}

fn node(name: &str, ip: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
           "status": {"addresses": [{"type": "ExternalIP", "address": ip}, {"type": "Hostname", "address": name}]}})
}

fn names(list: &kube::core::ObjectList<DynamicObject>) -> Vec<String> {
    list.items
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.metadata.namespace.as_deref().unwrap_or(""),
                o.metadata.name.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// Services, Ingresses, Nodes (cluster-scoped) and the rest at their real paths, with
/// label selectors, one resourceVersion counter for all, and what the server fills in.
#[tokio::test]
async fn every_resource_is_listed_at_its_path() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    api.apply_object(
        Resource::Service,
        service("default", "web", "web", "192.0.2.1"),
    );
    api.apply_object(
        Resource::Service,
        service("shop", "cart", "cart", "192.0.2.2"),
    );
    let stored = api.apply_object(Resource::Node, node("node-1", "198.51.100.1"));
    assert_eq!(stored["metadata"].get("namespace"), None, "cluster-scoped");
    api.apply_object(
        Resource::Ingress,
        json!({"metadata": {"name": "web"}, "spec": {"rules": [{"host": "web.example.com"}]}}),
    );

    let svcs: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Service));
    let list = svcs.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&list), ["default/web", "shop/cart"]);
    let shop: Api<DynamicObject> = Api::namespaced_with(c.clone(), "shop", &ar(Resource::Service));
    assert_eq!(
        names(&shop.list(&ListParams::default()).await.unwrap()),
        ["shop/cart"]
    );
    let l = svcs
        .list(&ListParams::default().labels("app in (cart,api)"))
        .await
        .unwrap();
    assert_eq!(names(&l), ["shop/cart"]);

    let nodes: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Node));
    assert_eq!(
        names(&nodes.list(&ListParams::default()).await.unwrap()),
        ["/node-1"]
    );
    // Namespaces are cluster-scoped, and `/api/v1/namespaces` is not mistaken for the
    // start of a namespaced path.
    api.apply_object(
        Resource::Namespace,
        json!({"metadata": {"name": "shop", "labels": {"team": "shop"}}}),
    );
    let nss: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Namespace));
    assert_eq!(
        names(&nss.list(&ListParams::default()).await.unwrap()),
        ["/shop"]
    );
    assert_eq!(
        names(&shop.list(&ListParams::default()).await.unwrap()),
        ["shop/cart"]
    );
    let ing: Api<DynamicObject> =
        Api::namespaced_with(c.clone(), "default", &ar(Resource::Ingress));
    let web = ing.get("web").await.unwrap();
    assert_eq!(web.types.unwrap().api_version, "networking.k8s.io/v1");
    assert_eq!(web.metadata.generation, Some(1));
    assert!(web.metadata.uid.is_some() && web.metadata.creation_timestamp.is_some());
    // One counter: the Ingress, written last, has the highest resourceVersion.
    let rv = |o: &DynamicObject| {
        o.metadata
            .resource_version
            .clone()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    let max_svc = list.items.iter().map(rv).max().unwrap();
    assert!(rv(&ing.get("web").await.unwrap()) > max_svc);
    for r in [
        Resource::EndpointSlice,
        Resource::Pod,
        Resource::HttpRoute,
        Resource::GrpcRoute,
        Resource::TlsRoute,
        Resource::TcpRoute,
        Resource::UdpRoute,
        Resource::Gateway,
        Resource::DnsEndpoint,
        Resource::Event,
        Resource::EventV1,
    ] {
        let a: Api<DynamicObject> = Api::all_with(c.clone(), &ar(r));
        assert!(
            a.list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty(),
            "{r}"
        );
    }
    let err = ing.get("nope").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("ingresses.networking.k8s.io \"nope\" not found"),
        "{err}"
    );

    // A changed spec moves the generation, a changed status does not.
    let mut s = service("default", "web", "web", "192.0.2.9");
    assert_eq!(
        api.apply_object(Resource::Service, s.clone())["metadata"]["generation"],
        1
    );
    s["spec"]["ports"][0]["port"] = 81.into();
    assert_eq!(
        api.apply_object(Resource::Service, s)["metadata"]["generation"],
        2
    );
    assert!(api.delete_object(Resource::Service, "shop", "cart"));
    assert!(!api.delete_object(Resource::Service, "shop", "cart"));
    assert_eq!(
        api.get_object(Resource::Node, "", "node-1").unwrap()["kind"],
        "Node"
    );
    assert_eq!(api.requests_of(Resource::Service), (4, 0));
}

/// kube's watcher over Services: the first list, then changes, a 410 after `expire`
/// (it lists again), and a 403 for a forbidden resource with RBAC's Status.
#[tokio::test]
async fn a_watcher_follows_one_resource_among_many() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    api.apply_object(
        Resource::Service,
        service("default", "web", "web", "192.0.2.1"),
    );
    let svcs: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Service));
    let mut w = watcher(svcs, watcher::Config::default().timeout(5)).boxed();
    let mut seen = Vec::new();
    let mut next = async || {
        // A 410 is the watcher's error; it lists again.
        let e = loop {
            match tokio::time::timeout(Duration::from_secs(10), w.next())
                .await
                .expect("an event")
                .expect("the stream goes on")
            {
                Ok(e) => break e,
                Err(e) => assert!(e.to_string().contains("too old resource version"), "{e}"),
            }
        };
        match e {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                format!("apply {}", o.metadata.name.unwrap())
            }
            watcher::Event::Delete(o) => format!("delete {}", o.metadata.name.unwrap()),
            watcher::Event::Init => "init".into(),
            watcher::Event::InitDone => "done".into(),
        }
    };
    for _ in 0..3 {
        seen.push(next().await);
    }
    assert_eq!(seen, ["init", "apply web", "done"]);
    // Other resources' changes are not this watch's.
    api.apply_object(Resource::Ingress, json!({"metadata": {"name": "web"}}));
    api.apply_object(
        Resource::Service,
        service("default", "api", "api", "192.0.2.2"),
    );
    assert_eq!(next().await, "apply api");
    api.delete_object(Resource::Service, "default", "web");
    assert_eq!(next().await, "delete web");
    let lists = api.requests_of(Resource::Service).0;
    api.expire();
    assert_eq!(next().await, "init");
    assert_eq!(next().await, "apply api");
    assert_eq!(next().await, "done");
    assert!(api.requests_of(Resource::Service).0 > lists, "listed again");

    api.forbid(Resource::Ingress);
    let ing: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Ingress));
    let err = ing.list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(s) = err else {
        panic!("{err}")
    };
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        s.message,
        "ingresses.networking.k8s.io is forbidden: User \"system:serviceaccount:dnsplane:dnsplane\" cannot list resource \"ingresses\" in API group \"networking.k8s.io\" at the cluster scope"
    );
    let svc_ns: Api<DynamicObject> =
        Api::namespaced_with(c.clone(), "default", &ar(Resource::Service));
    api.forbid(Resource::Service);
    let kube::Error::Api(s) = svc_ns.list(&ListParams::default()).await.unwrap_err() else {
        panic!()
    };
    assert!(
        s.message.ends_with(
            "cannot list resource \"services\" in API group \"\" in the namespace \"default\""
        ),
        "{}",
        s.message
    );
    api.allow(Resource::Service);
    assert_eq!(
        svc_ns
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    // A resource whose CRD is not installed: 404.
    api.uninstall(Resource::TlsRoute);
    let tls: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::TlsRoute));
    let kube::Error::Api(s) = tls.list(&ListParams::default()).await.unwrap_err() else {
        panic!()
    };
    assert_eq!(s.code, 404);
    api.install(Resource::TlsRoute);
    assert!(
        tls.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// `limit` and `continue` page a list in key order; a token older than a compaction
/// gets 410, as the API server's.
#[tokio::test]
async fn lists_are_paged() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    for i in 0..5 {
        api.apply_object(
            Resource::Service,
            service("b", &format!("s{i}"), "x", "192.0.2.1"),
        );
    }
    api.apply_object(Resource::Service, service("a", "first", "x", "192.0.2.1"));
    let svcs: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Service));
    let mut all = Vec::new();
    let mut lp = ListParams::default().limit(2);
    let mut pages = 0;
    let mut rvs = Vec::new();
    loop {
        let page = svcs.list(&lp).await.unwrap();
        pages += 1;
        all.extend(names(&page));
        rvs.push(page.metadata.resource_version.clone());
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(all, ["a/first", "b/s0", "b/s1", "b/s2", "b/s3", "b/s4"]);
    assert_eq!(pages, 3);
    assert!(
        rvs.windows(2).all(|w| w[0] == w[1]),
        "every page at the first page's resourceVersion"
    );

    let page = svcs.list(&ListParams::default().limit(2)).await.unwrap();
    api.expire();
    let token = page.metadata.continue_.unwrap();
    let kube::Error::Api(s) = svcs
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap_err()
    else {
        panic!()
    };
    assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
}

/// Events as kube-rs's Recorder writes them (events.k8s.io/v1: create, then a merge
/// patch of the series), read back in the core shape kubectl reads, with its field
/// selector; and refused as the API server refuses them.
#[tokio::test]
async fn events_are_stored_validated_and_read_in_both_shapes() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    let svc = api.apply_object(
        Resource::Service,
        service("default", "web", "web", "192.0.2.1"),
    );
    let uid = svc["metadata"]["uid"].as_str().unwrap().to_string();
    let v1: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar(Resource::EventV1));
    let note = "web.example.com. A: published";
    let event = fixtures::recorder_event("dnsplane.io/planner", note, json!(uid));
    let event: DynamicObject = serde_json::from_value(event).unwrap();
    v1.create(&PostParams::default(), &event).await.unwrap();
    let patch = json!({"series": {"count": 2, "lastObservedTime": "2026-11-29T03:01:00.000000Z"}});
    v1.patch(
        "web.1872a1b2c3d4e5f6",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();

    let core: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar(Resource::Event));
    let selector = format!(
        "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Service,involvedObject.uid={uid}"
    );
    let list = core
        .list(&ListParams::default().fields(&selector).limit(500))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let e = &list.items[0].data;
    assert_eq!(e["message"], "web.example.com. A: published");
    assert_eq!(e["series"]["count"], 2);
    assert_eq!(e["reportingComponent"], "dnsplane.io/planner");
    let other = core
        .list(&ListParams::default().fields("involvedObject.name=api"))
        .await
        .unwrap();
    assert!(other.items.is_empty());
    assert_eq!(api.events().len(), 1);

    // A client-go style core Event, then its count patched (strategic merge).
    let old_style: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.2", "namespace": "default"},
        "involvedObject": {"kind": "Service", "name": "web", "namespace": "default", "uid": uid},
        "reason": "Conflict", "message": "m", "type": "Warning", "count": 1,
        "firstTimestamp": "2026-11-29T03:00:00Z", "lastTimestamp": "2026-11-29T03:00:00Z",
        "source": {"component": "dnsplane"},
    }))
    .unwrap();
    core.create(&PostParams::default(), &old_style)
        .await
        .unwrap();
    let p = json!({"count": 2, "lastTimestamp": "2026-11-29T03:05:00Z", "message": "m2"});
    core.patch("web.2", &PatchParams::default(), &Patch::Strategic(&p))
        .await
        .unwrap();
    let stored = api.get_object(Resource::Event, "default", "web.2").unwrap();
    assert_eq!(
        (stored["count"].clone(), stored["message"].clone()),
        (json!(2), json!("m2"))
    );

    // Refused: a Bogus type and a note over 1 kB through events.k8s.io/v1.
    let mut bad = event.clone();
    bad.metadata.name = Some("web.3".into());
    bad.data["type"] = "Bogus".into();
    bad.data["note"] = "x".repeat(1025).into();
    let kube::Error::Api(s) = v1.create(&PostParams::default(), &bad).await.unwrap_err() else {
        panic!()
    };
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert!(
        s.message.starts_with("Event.events.k8s.io \"web.3\" is invalid: [message: Invalid value: \"\": can have at most 1024 characters, type:"),
        "{}",
        s.message
    );
    // An old-style Event in another namespace than its object's.
    let mut wrong = old_style.clone();
    wrong.metadata.name = Some("web.4".into());
    wrong.data["involvedObject"]["namespace"] = "shop".into();
    let kube::Error::Api(s) = core
        .create(&PostParams::default(), &wrong)
        .await
        .unwrap_err()
    else {
        panic!()
    };
    assert_eq!(s.code, 422, "{}", s.message);
    assert!(
        s.message.contains(
            "involvedObject.namespace: Invalid value: \"shop\": does not match event.namespace"
        ),
        "{}",
        s.message
    );
    // Patching what does not exist.
    let kube::Error::Api(s) = v1
        .patch("nope", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_err()
    else {
        panic!()
    };
    assert_eq!(s.code, 404);
    assert_eq!(api.events().len(), 2);
}

/// `metadata.generateName` (what dnsplane's event writer sends, as client-go's
/// `GenerateName` users do): the server names the object, prefix and 5 characters,
/// a new name each time; neither name nor generateName is refused.
#[tokio::test]
async fn a_generated_name_is_made_by_the_server() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    let core: Api<DynamicObject> = Api::namespaced_with(c, "default", &ar(Resource::Event));
    let event = |meta: serde_json::Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Event", "metadata": meta,
            "involvedObject": {"kind": "Service", "name": "web", "namespace": "default"},
            "reason": "Published", "message": "m", "type": "Normal", "count": 1,
            "firstTimestamp": "2026-11-29T03:00:00Z", "lastTimestamp": "2026-11-29T03:00:00Z",
            "source": {"component": "dnsplane"},
        }))
        .unwrap()
    };
    let generated = event(json!({"generateName": "web.", "namespace": "default"}));
    let a = core
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let b = core
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let (a, b) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(a.starts_with("web.") && a.len() == "web.".len() + 5, "{a}");
    assert_ne!(a, b);
    assert!(api.get_object(Resource::Event, "default", &a).is_some());
    let kube::Error::Api(s) = core
        .create(
            &PostParams::default(),
            &event(json!({"namespace": "default"})),
        )
        .await
        .unwrap_err()
    else {
        panic!()
    };
    assert_eq!(s.code, 422, "{}", s.message);
    assert!(
        s.message.contains("name or generateName is required"),
        "{}",
        s.message
    );
}

/// A bulk seed of 25,000 objects, listed back through kube's paging (500 a page) and
/// followed by a watch from the list's resourceVersion that sees only the change
/// after it.
#[tokio::test]
async fn twenty_five_thousand_objects_page_through() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    api.apply_objects(
        Resource::Service,
        (0..10_000).map(|i| {
            service(
                &format!("ns{}", i % 50),
                &format!("svc{i}"),
                "x",
                "192.0.2.1",
            )
        }),
    );
    api.apply_objects(
        Resource::Ingress,
        (0..10_000)
            .map(|i| json!({"metadata": {"name": format!("ing{i}"), "namespace": "default"}})),
    );
    api.apply_objects(
        Resource::HttpRoute,
        (0..5_000).map(|i| {
            json!({"metadata": {"name": format!("route{i}"), "namespace": "default"},
                                   "spec": {"hostnames": [format!("r{i}.example.com")]}})
        }),
    );
    let mut total = 0;
    for (r, want) in [
        (Resource::Service, 10_000),
        (Resource::Ingress, 10_000),
        (Resource::HttpRoute, 5_000),
    ] {
        let a: Api<DynamicObject> = Api::all_with(c.clone(), &ar(r));
        let mut lp = ListParams::default().limit(500);
        let mut n = 0;
        loop {
            let page = a.list(&lp).await.unwrap();
            n += page.items.len();
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(t) => lp = lp.continue_token(&t),
                None => break,
            }
        }
        assert_eq!(n, want, "{r}");
        total += n;
    }
    assert_eq!(total, 25_000);
    // The watcher, as the planner runs it.
    let svcs: Api<DynamicObject> = Api::all_with(c, &ar(Resource::Service));
    let mut w = watcher(svcs, watcher::Config::default()).boxed();
    let mut listed = 0;
    loop {
        match w.try_next().await.unwrap().unwrap() {
            watcher::Event::InitApply(_) => listed += 1,
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(listed, 10_000);
    api.apply_object(Resource::Service, service("ns0", "svc0", "x", "192.0.2.99"));
    match w.try_next().await.unwrap().unwrap() {
        watcher::Event::Apply(o) => assert_eq!(
            o.data["status"]["loadBalancer"]["ingress"][0]["ip"],
            "192.0.2.99"
        ),
        e => panic!("{e:?}"),
    }
}

/// HTTPRoutes are pruned, defaulted and validated by the vendored Gateway API CRD: a
/// wrong-typed field is refused with 422 and its path, over HTTP as to a test.
#[tokio::test]
async fn gateway_api_objects_are_held_to_their_crds() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    let routes: Api<DynamicObject> = Api::namespaced_with(c, "default", &ar(Resource::HttpRoute));
    let good = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["web.example.com"],
                 "rules": [{"backendRefs": [{"name": "web", "port": 80}]}], "extra": 1},
    });
    let stored = routes
        .create(
            &PostParams::default(),
            &serde_json::from_value(good.clone()).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        stored.data["spec"]["parentRefs"][0]["kind"], "Gateway",
        "defaulted"
    );
    assert!(stored.data["spec"].get("extra").is_none(), "pruned");

    let mut bad = good.clone();
    bad["metadata"]["name"] = "bad".into();
    bad["spec"]["rules"][0]["backendRefs"][0]["port"] = "eighty".into();
    let kube::Error::Api(s) = routes
        .create(
            &PostParams::default(),
            &serde_json::from_value(bad.clone()).unwrap(),
        )
        .await
        .unwrap_err()
    else {
        panic!()
    };
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        "HTTPRoute.gateway.networking.k8s.io \"bad\" is invalid: spec.rules[0].backendRefs[0].port: Invalid value: \"string\": spec.rules[0].backendRefs[0].port in body must be of type integer: \"string\""
    );
    let e = api.try_apply_object(Resource::HttpRoute, bad).unwrap_err();
    assert_eq!(e.code, 422);
    assert_eq!(
        e.status["details"]["causes"][0]["field"],
        "spec.rules[0].backendRefs[0].port"
    );
    assert!(
        api.get_object(Resource::HttpRoute, "default", "bad")
            .is_none()
    );
}

/// A role that lists but does not watch; Events that can be created but not patched.
#[tokio::test]
async fn one_verb_can_be_forbidden() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    api.apply_object(
        Resource::Service,
        service("default", "web", "web", "192.0.2.1"),
    );
    api.forbid_verbs(Resource::Service, &["watch"]);
    let svcs: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Service));
    assert_eq!(
        svcs.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    let mut w = watcher(svcs, watcher::Config::default()).boxed();
    let err = loop {
        match tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .unwrap()
            .unwrap()
        {
            Ok(_) => continue,
            Err(e) => break e.to_string(),
        }
    };
    assert!(err.contains("cannot watch resource \"services\""), "{err}");
    assert_eq!(api.requests_of(Resource::Service).1, 1);
}

/// A real API server's list of a built-in kind leaves `apiVersion` and `kind` out of
/// its items (only the list has them); a CRD's keeps them; a watch event has them.
#[tokio::test]
async fn built_in_list_items_have_no_type_meta() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    api.apply_object(
        Resource::Service,
        service("default", "web", "web", "192.0.2.1"),
    );
    api.apply_object(Resource::HttpRoute, fixtures::web_route(&[]));
    let svcs: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Service));
    let list = svcs.list(&ListParams::default()).await.unwrap();
    assert!(list.items[0].types.is_none());
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("web"));
    let routes: Api<DynamicObject> = Api::all_with(c, &ar(Resource::HttpRoute));
    let list = routes.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items[0].types.as_ref().unwrap().kind, "HTTPRoute");
}

/// kube-rs's own `Recorder` (what a controller built on kube uses): the first
/// publish creates an events.k8s.io/v1 Event, the same one again patches its series;
/// both are accepted, and the core shape counts two.
#[tokio::test]
async fn kube_rs_recorder_events_are_accepted() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    let svc = api.apply_object(
        Resource::Service,
        service("default", "web", "web", "192.0.2.1"),
    );
    let recorder = Recorder::new(
        c,
        Reporter {
            controller: "dnsplane".into(),
            instance: Some("planner-0".into()),
        },
    );
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Service".into()),
        name: Some("web".into()),
        namespace: Some("default".into()),
        uid: svc["metadata"]["uid"].as_str().map(str::to_string),
        ..ObjectReference::default()
    };
    let event = Event {
        type_: EventType::Normal,
        reason: "Published".into(),
        note: Some("web.example.com. A 192.0.2.1: published".into()),
        action: "Publish".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await.unwrap();
    recorder.publish(&event, &reference).await.unwrap();
    let events = api.events();
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e["series"]["count"], 2);
    assert_eq!(e["involvedObject"]["uid"], svc["metadata"]["uid"]);
    assert_eq!(e["reportingComponent"], "dnsplane");
    assert_eq!(e["message"], "web.example.com. A 192.0.2.1: published");

    // A note over 1 kB is refused, as the API server refuses it.
    let long = Event {
        note: Some("x".repeat(1025)),
        reason: "Conflict".into(),
        ..event
    };
    let err = recorder.publish(&long, &reference).await.unwrap_err();
    assert!(
        err.to_string().contains("can have at most 1024 characters"),
        "{err}"
    );
}

/// An object created with `generateName` only gets a name, as from the API server.
#[tokio::test]
async fn generate_name_names_the_object() {
    let api = FakeKubeApi::start().await;
    let generated = api.apply_object(
        Resource::Pod,
        json!({"metadata": {"generateName": "web-", "namespace": "default"}}),
    );
    let name = generated["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
}

/// One kind's outage: its lists answer 500 and its watches are cut, the others go on;
/// an object deleted quietly shows only in a relist.
#[tokio::test]
async fn one_resource_can_fail_alone() {
    let api = FakeKubeApi::start().await;
    let c = client(&api).await;
    api.apply_object(
        Resource::Service,
        service("default", "web", "web", "192.0.2.1"),
    );
    api.apply_object(Resource::Ingress, json!({"metadata": {"name": "web"}}));
    let svcs: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Service));
    let ings: Api<DynamicObject> = Api::all_with(c.clone(), &ar(Resource::Ingress));
    // The watcher polled in a task of its own, so that its watch is open meanwhile.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut w = watcher(ings.clone(), watcher::Config::default()).boxed();
    tokio::spawn(async move {
        while let Some(e) = w.next().await {
            let _ = tx.send(e.map_err(|e| e.to_string()));
        }
    });
    let mut next = async || rx.recv().await.unwrap().unwrap();
    while !matches!(next().await, watcher::Event::InitDone) {}
    let open = async || {
        for _ in 0..100 {
            if api.open_watches() == 1 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    };
    assert!(open().await, "the watch opens");
    api.set_failing_for(Resource::Service, true);
    let kube::Error::Api(s) = svcs.list(&ListParams::default()).await.unwrap_err() else {
        panic!()
    };
    assert_eq!(s.code, 500);
    assert_eq!(
        ings.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    assert_eq!(api.open_watches(), 1, "the Ingress watch is not cut");
    api.set_failing_for(Resource::Service, false);
    assert!(api.delete_object_quietly(Resource::Ingress, "default", "web"));
    api.apply_object(Resource::Ingress, json!({"metadata": {"name": "next"}}));
    match next().await {
        watcher::Event::Apply(o) => assert_eq!(o.metadata.name.as_deref(), Some("next")),
        e => panic!("only the new one is told: {e:?}"),
    }
    assert_eq!(
        svcs.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}
