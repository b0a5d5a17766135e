//! Which real server a full-stack test or the benchmark runs against, by name.

/// Which real server a full-stack test or the benchmark runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// PowerDNS through the `pdns` driver (HTTP API).
    Pdns,
    /// BIND through the `rfc2136` driver (DNS UPDATE + TSIG).
    Bind,
    /// Route 53 through the `route53` driver, served by dnsplane's emulator.
    Route53,
    /// Route 53 through the `route53` driver, served by moto (as LocalStack serves it).
    Route53Moto,
    /// Google Cloud DNS through the `clouddns` driver, served by dnsplane's emulator.
    CloudDns,
    /// Cloudflare through the `cloudflare` driver, served by dnsplane's emulator.
    Cloudflare,
    /// Azure DNS through the `azure` driver, served by dnsplane's emulator.
    Azure,
}

impl Kind {
    /// The driver name, also used as the applier account name.
    pub fn driver(self) -> &'static str {
        match self {
            Kind::Pdns => "pdns",
            Kind::Bind => "rfc2136",
            Kind::Route53 | Kind::Route53Moto => "route53",
            Kind::CloudDns => "clouddns",
            Kind::Cloudflare => "cloudflare",
            Kind::Azure => "azure",
        }
    }

    /// A human name for reports.
    pub fn server(self) -> &'static str {
        match self {
            Kind::Pdns => "PowerDNS",
            Kind::Bind => "BIND",
            Kind::Route53 => "Route 53 (emulated)",
            Kind::Route53Moto => "Route 53 (moto)",
            Kind::CloudDns => "Cloud DNS (emulated)",
            Kind::Cloudflare => "Cloudflare (emulated)",
            Kind::Azure => "Azure DNS (emulated)",
        }
    }

    /// A cloud API served by dnsplane's emulator in-process: no DNS is served, the
    /// emulator's listing stands for `dig` and AXFR, its own faults for the decorator's.
    pub fn emulated(self) -> bool {
        matches!(
            self,
            Kind::Route53 | Kind::Route53Moto | Kind::CloudDns | Kind::Cloudflare | Kind::Azure
        )
    }

    /// A benchmark's `--servers` value: `pdns,bind,route53,clouddns,cloudflare` (also
    /// `powerdns`, `rfc2136`).
    pub fn parse_list(list: &str) -> Result<Vec<Kind>, String> {
        list.split(',')
            .map(|s| match s.trim() {
                "pdns" | "powerdns" => Ok(Kind::Pdns),
                "bind" | "rfc2136" => Ok(Kind::Bind),
                "route53" => Ok(Kind::Route53),
                "route53-moto" | "moto" => Ok(Kind::Route53Moto),
                "clouddns" => Ok(Kind::CloudDns),
                "cloudflare" => Ok(Kind::Cloudflare),
                "azure" => Ok(Kind::Azure),
                other => Err(format!("unknown server {other:?}")),
            })
            .collect()
    }
}
