//! `dnsplane up --azure-emulator`: the zones live in an Azure DNS emulator served from
//! the same process (the one `dnsplane emulate azure` serves), written through the
//! `azure` driver as a real subscription would be, with the emulator's static token
//! in a file of the state directory.
use super::UpArgs;
use anyhow::Context;
use dnsplane_applier::config::{AccountConfig, DriverConfig};
use dnsplane_applier::provider::azure::AzureConfig;
use dnsplane_emulate::azure::{
    AzureEmulator, AzureOptions, DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, DEFAULT_TOKEN,
    ZoneSeed,
};

/// Starts the Azure emulator with the zones (public, in its default subscription and
/// resource group), and returns it with the applier account that writes to it.
pub(super) async fn start(args: &UpArgs) -> anyhow::Result<(AzureEmulator, AccountConfig)> {
    let listener = tokio::net::TcpListener::bind(&args.emulator_listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (the Azure emulator; --emulator-listen)",
                args.emulator_listen
            )
        })?;
    let zones = args
        .zone
        .iter()
        .map(|z| ZoneSeed {
            name: z.as_str().trim_end_matches('.').to_string(),
            private: false,
            subscription: None,
            resource_group: None,
        })
        .collect();
    let emulator = AzureEmulator::start(
        listener,
        AzureOptions {
            zones,
            ..AzureOptions::default()
        },
    )
    .await
    .context("the Azure emulator")?;
    std::fs::create_dir_all(&args.state_dir)
        .with_context(|| format!("cannot create {}", args.state_dir.display()))?;
    let token = args.state_dir.join("azure-emulator-token");
    std::fs::write(&token, DEFAULT_TOKEN)
        .with_context(|| format!("cannot write {}", token.display()))?;
    let mut cfg = AzureConfig::new(DEFAULT_SUBSCRIPTION, DEFAULT_RESOURCE_GROUP);
    cfg.endpoint = emulator.endpoint();
    cfg.authority_host = emulator.endpoint();
    cfg.token_file = Some(token);
    let account = AccountConfig {
        name: "azure-emulator".into(),
        zones: args.zone.clone(),
        circuit: Default::default(),
        faults: Vec::new(),
        quota: None,
        pacing: Default::default(),
        driver: DriverConfig::Azure(cfg),
    };
    Ok((emulator, account))
}

/// The banner line: where the emulator serves ARM and how to read it.
pub(super) fn banner(args: &UpArgs, emulator: &AzureEmulator) -> String {
    format!(
        "dnsplane up: planner gRPC {}, applier gRPC {}, Azure DNS emulator {} (subscription {DEFAULT_SUBSCRIPTION}, resource group {DEFAULT_RESOURCE_GROUP}, token {DEFAULT_TOKEN}), state in {}. Ctrl-C to stop.",
        args.planner_listen,
        args.applier_listen,
        emulator.endpoint(),
        args.state_dir.display()
    )
}
