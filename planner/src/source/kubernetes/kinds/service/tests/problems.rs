//! dnsplane's own cases: what external-dns skips silently or publishes anyway, and
//! dnsplane refuses (the object keeps its last accepted records and is told which
//! annotation is wrong), and when a Service waits for its load balancer.
use super::*;

fn run(svc: Svc, options: &Options) -> Translation {
    translate(&svc.build(), &Cluster::default(), options)
}

fn lb() -> Svc {
    Svc::foo("LoadBalancer").lbs(&["1.2.3.4"])
}

#[test]
fn unreadable_annotations_are_refused_with_the_field_named() {
    let long = format!("{}.example.org", vec!["a".repeat(60); 4].join("."));
    let cases: Vec<(&str, Svc, &str)> = vec![
        (
            "a name over 253 octets",
            lb().ann(HOSTNAME, &long),
            HOSTNAME,
        ),
        (
            "an empty label",
            lb().ann(HOSTNAME, "foo..example.org"),
            HOSTNAME,
        ),
        (
            "a stray comma",
            lb().ann(HOSTNAME, "foo.example.org,"),
            HOSTNAME,
        ),
        (
            "a bad internal hostname",
            lb().ann(INTERNAL_HOSTNAME, ".foo.example.org"),
            INTERNAL_HOSTNAME,
        ),
        (
            "the alpha prefix is named as written",
            lb().ann("external-dns.alpha.kubernetes.io/hostname", "a..b"),
            "external-dns.alpha.kubernetes.io/hostname",
        ),
        (
            "a target that is neither IP nor name",
            lb().ann(HOSTNAME, "foo.example.org")
                .ann(TARGET, "http://lb"),
            TARGET,
        ),
        (
            "a mistyped address as target",
            lb().ann(HOSTNAME, "foo.example.org").ann(TARGET, "1.2.3"),
            TARGET,
        ),
        (
            "an empty entry among targets",
            lb().ann(HOSTNAME, "foo.example.org")
                .ann(TARGET, "1.2.3.4,,5.6.7.8"),
            TARGET,
        ),
        (
            "a TTL of abc",
            lb().ann(HOSTNAME, "foo.example.org").ann(TTL, "abc"),
            TTL,
        ),
        (
            "a TTL of 0",
            lb().ann(HOSTNAME, "foo.example.org").ann(TTL, "0"),
            TTL,
        ),
    ];
    for (title, svc, field) in cases {
        let got = run(svc, &opts());
        check(title, &got, Want::Problem(field));
        assert!(
            got.problems
                .iter()
                .all(|p| p.field.starts_with("metadata.annotations[")),
            "{title}: {:?}",
            got.problems
        );
    }
}

#[test]
fn a_bad_ttl_nobody_uses_is_no_problem() {
    // No name asked for: nothing is published, so the TTL is never used.
    let got = run(lb().ann(TTL, "abc"), &opts());
    check("unused bad TTL", &got, Want::Endpoints(vec![]));
}

#[test]
fn template_names_are_checked_too() {
    let options = Options {
        fqdn_template: Some("{{.Labels.team}}.example.org".into()),
        ..opts()
    };
    // No `team` label: the template gives ".example.org".
    check(
        "template gives an empty label",
        &run(lb(), &options),
        Want::Problem("fqdn_template"),
    );
    let ok = run(lb().label("team", "web"), &options);
    check(
        "template with the label",
        &ok,
        Want::Endpoints(vec![ep("web.example.org", "A", &["1.2.3.4"])]),
    );
}

#[test]
fn a_bad_annotation_filter_is_a_problem_not_a_match() {
    let options = Options {
        annotation_filter: Some("team in web".into()),
        ..opts()
    };
    check(
        "bad filter",
        &run(lb().ann(HOSTNAME, "foo.example.org"), &options),
        Want::Problem("annotation_filter"),
    );
}

#[test]
fn a_load_balancer_without_address_waits_for_it() {
    let no_lb = || Svc::foo("LoadBalancer");
    check(
        "hostname, no address",
        &run(no_lb().ann(HOSTNAME, "foo.example.org"), &opts()),
        Want::Waiting,
    );
    let template = Options {
        fqdn_template: Some("{{.Name}}.example.org".into()),
        ..opts()
    };
    check(
        "template name, no address",
        &run(no_lb(), &template),
        Want::Waiting,
    );
    // A target annotation does not need the load balancer.
    check(
        "target annotation",
        &run(
            no_lb()
                .ann(HOSTNAME, "foo.example.org")
                .ann(TARGET, "5.6.7.8"),
            &opts(),
        ),
        Want::Endpoints(vec![ep("foo.example.org", "A", &["5.6.7.8"])]),
    );
    // Nothing asked for: nothing to wait for.
    check("no name", &run(no_lb(), &opts()), Want::Endpoints(vec![]));
    // The internal name alone uses the cluster IP.
    check(
        "internal hostname only",
        &run(
            no_lb()
                .ann(INTERNAL_HOSTNAME, "foo.internal.example.org")
                .cluster_ip("10.0.0.1"),
            &opts(),
        ),
        Want::Endpoints(vec![ep("foo.internal.example.org", "A", &["10.0.0.1"])]),
    );
}

#[test]
fn the_alpha_prefix_gives_the_same_records() {
    let svc = Svc::foo("LoadBalancer")
        .ann(
            "external-dns.alpha.kubernetes.io/hostname",
            "foo.example.org",
        )
        .ann("external-dns.alpha.kubernetes.io/ttl", "60")
        .ann("external-dns.alpha.kubernetes.io/set-identifier", "a")
        .lbs(&["1.2.3.4"]);
    check(
        "alpha prefix",
        &run(svc, &opts()),
        Want::Endpoints(vec![Endpoint {
            set_identifier: "a".into(),
            ..with_ttl(ep("foo.example.org", "A", &["1.2.3.4"]), 60)
        }]),
    );
}

#[test]
fn kinds_translate_reads_services() {
    let svc = lb().ann(HOSTNAME, "foo.example.org").build();
    let got = super::super::super::translate(
        super::super::super::Kind::Service,
        &svc,
        &Cluster::default(),
        &opts(),
    );
    check(
        "through kinds::translate",
        &got,
        Want::Endpoints(vec![ep("foo.example.org", "A", &["1.2.3.4"])]),
    );
}

#[test]
fn the_template_runs_only_when_its_names_are_used() {
    // external-dns's CombineWithEndpoints: with annotation endpoints and no combine,
    // the template is not run, so its failure on this Service does not matter.
    let options = Options {
        fqdn_template: Some("{{ index .Spec.Ports 5 }}.example.org".into()),
        ..opts()
    };
    check(
        "template not needed",
        &run(lb().ann(HOSTNAME, "foo.example.org"), &options),
        Want::Endpoints(vec![ep("foo.example.org", "A", &["1.2.3.4"])]),
    );
    check(
        "template needed",
        &run(lb(), &options),
        Want::Problem("fqdn_template"),
    );
    let combine = Options {
        combine_fqdn_annotation: true,
        ..options
    };
    check(
        "template combined",
        &run(lb().ann(HOSTNAME, "foo.example.org"), &combine),
        Want::Problem("fqdn_template"),
    );
}

#[test]
fn a_service_that_gives_nothing_by_design_says_why() {
    let skipped = |svc: Svc, options: &Options| run(svc, options).skipped;
    let no_name = skipped(lb(), &opts()).expect("no name");
    assert!(no_name.contains("no hostname annotation"), "{no_name}");
    let ignored = Options {
        ignore_hostname_annotation: true,
        ..opts()
    };
    let why = skipped(lb().ann(HOSTNAME, "foo.example.org"), &ignored).expect("ignored");
    assert!(why.contains("ignore_hostname_annotation"), "{why}");
    let cluster_ip = Svc::foo("ClusterIP")
        .cluster_ip("10.0.0.1")
        .ann(HOSTNAME, "foo.example.org");
    let why = skipped(cluster_ip, &opts()).expect("cluster ip");
    assert!(why.contains("publish_internal_services"), "{why}");
    // A headless Service without ready endpoints is the cluster's state, not a design.
    let headless = Svc::foo("ClusterIP")
        .cluster_ip("None")
        .ann(HOSTNAME, "foo.example.org");
    assert_eq!(skipped(headless, &opts()), None);
}

#[test]
fn a_pod_with_an_unreadable_target_is_left_out() {
    let svc = Svc::foo("ClusterIP")
        .cluster_ip("None")
        .ann(HOSTNAME, "svc.example.org")
        .build();
    let cluster = Cluster::default()
        .with_pods(vec![
            Pod::new("testing", "good").pod_ip("10.0.0.1"),
            Pod::new("testing", "bad")
                .ann(TARGET, "http://x")
                .pod_ip("10.0.0.2"),
        ])
        .with_slice(
            "testing/foo",
            "IPv4",
            vec![
                slice_ep("10.0.0.1", "good", true),
                slice_ep("10.0.0.2", "bad", true),
            ],
        );
    check(
        "bad pod target",
        &translate(&svc, &cluster, &opts()),
        Want::Endpoints(vec![ep("svc.example.org", "A", &["10.0.0.1"])]),
    );
}
