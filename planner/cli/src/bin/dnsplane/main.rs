//! `dnsplane`: the CLI for people. `up` runs planner and applier on loopback with the
//! embedded provider ([`up`]); `plan`, `status`, `records`, `history`, `sync`, `approve`,
//! `release` and `resume` talk to a running planner ([`remote`], [`act`], [`sync`],
//! [`history`]) and print through [`output`] (tables, JSON, YAML, Markdown
//! ([`markdown`])); `import`, `export` and `adopt` turn a live zone into files and
//! bring it under management, and `plan --desired` plans a proposed state ([`import`],
//! [`proposed`], [`files`]); `emulate` serves a local emulator of a cloud DNS API;
//! `completions` and `man` print the shell completion script and the man page
//! ([`meta`]).
use clap::{Parser, Subcommand};

mod act;
mod conn;
mod files;
mod history;
mod import;
mod markdown;
mod meta;
mod output;
mod proposed;
mod remote;
mod secure;
mod sync;
mod up;
mod view;

use conn::Conn;
use output::{Output, OutputArgs};
use up::UpArgs;

#[derive(Debug, Parser)]
#[command(
    name = "dnsplane",
    version,
    about = "Keep DNS zones equal to a declared desired state"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run planner and applier on loopback with the embedded provider.
    Up(UpArgs),
    /// Print the changes a sync would make now (a dry run), or, with `--desired`, the
    /// changes it would make if PATH were the desired state.
    Plan {
        #[command(flatten)]
        conn: Conn,
        /// Only these zones.
        #[arg(long)]
        zone: Vec<String>,
        /// Only the zones' targets at this account (a zone served by several
        /// accounts has one target per account).
        #[arg(long, default_value = "")]
        account: String,
        #[command(flatten)]
        output: OutputArgs,
        /// Exit 2 when the plan has changes (or a held plan), 0 when it has none, 1 on
        /// an error: a CI gate, as Terraform's flag of the same name.
        #[arg(long)]
        detailed_exitcode: bool,
        /// Plan this file or directory as the whole desired state of the zones planned
        /// (a pull request's files): read here as the planner's file source reads it,
        /// planned by the running planner, nothing changed or kept.
        #[arg(long, value_name = "PATH")]
        desired: Option<std::path::PathBuf>,
        /// What the files under --desired are.
        #[arg(long, value_enum, default_value_t, requires = "desired")]
        format: files::FormatArg,
    },
    /// Write a live zone's records as files to commit (DNS as code): records of other
    /// owners and ownership marks left out and listed.
    Import(import::ImportArgs),
    /// Print a zone's desired state (or, with --observed, what the provider holds) as
    /// a zone file, octoDNS YAML or DNSEndpoint manifests.
    Export {
        #[command(flatten)]
        conn: Conn,
        /// The zone, e.g. `example.com`.
        zone: String,
        /// The account of the zone's target, where the zone is served by several
        /// accounts (`accounts = [...]`).
        #[arg(long, default_value = "")]
        account: String,
        /// What to print.
        #[arg(long, value_enum, default_value_t)]
        format: files::WriteFormat,
        /// What the provider holds (every data record, whoever owns it), not the
        /// desired state.
        #[arg(long)]
        observed: bool,
    },
    /// Take ownership of a zone's unowned records that equal the desired state (one
    /// atomic change each: data asserted unchanged, this planner's mark created); the
    /// plan is shown first.
    Adopt {
        #[command(flatten)]
        conn: Conn,
        /// The zone, e.g. `example.com`.
        zone: String,
        /// The account of the zone's target, where the zone is served by several
        /// accounts (`accounts = [...]`).
        #[arg(long, default_value = "")]
        account: String,
        /// Only show the plan.
        #[arg(long, conflicts_with = "digest")]
        dry_run: bool,
        /// Write only if the plan is still this one (from a dry run).
        #[arg(long)]
        digest: Option<String>,
    },
    /// Print the planner's status per zone (exit 0 converged, 2 not converged or
    /// degraded, 3 a healthy standby, 1 the planner cannot be asked).
    Status {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// List records that are not converged (conflicts, invalid, failed, ...), or with
    /// NAME every record at that name, converged or not, each value with the sources
    /// that want it.
    Records {
        #[command(flatten)]
        conn: Conn,
        /// One record name, e.g. `api.example.com`.
        name: Option<String>,
        #[arg(long, default_value = "")]
        zone: String,
        /// The account of the zone's target, where the zone is served by several
        /// accounts (`accounts = [...]`).
        #[arg(long, default_value = "")]
        account: String,
        /// Include converged records.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Print the audit events of one record name, newest first (needs `[audit] file`).
    History {
        #[command(flatten)]
        conn: Conn,
        /// The record's name, e.g. `api.example.com`.
        name: String,
        /// Only events of this zone.
        #[arg(long, default_value = "")]
        zone: String,
        /// The account of the zone's target, where the zone is served by several
        /// accounts (`accounts = [...]`).
        #[arg(long, default_value = "")]
        account: String,

        /// At most this many events.
        #[arg(long, default_value_t = 100)]
        limit: u32,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Approve a zone's plan that the mass-change guard (or approve mode) holds (shown
    /// by `status`).
    Approve {
        #[command(flatten)]
        conn: Conn,
        /// The zone whose held plan to approve.
        zone: String,
        /// The account of the zone's target, where the zone is served by several
        /// accounts (`accounts = [...]`).
        #[arg(long, default_value = "")]
        account: String,

        /// The digest of the plan you reviewed; without it, the plan held now is
        /// shown and approved.
        #[arg(long)]
        digest: Option<String>,
    },
    /// Hand every record this planner owns in a zone to an external-dns owner
    /// (external-dns's TXT marks written, dnsplane's removed, no value touched) and
    /// stop managing the zone until `resume` (docs/external-dns.md, the way back).
    Release {
        #[command(flatten)]
        conn: Conn,
        /// The zone to hand over.
        zone: String,
        /// The account of the zone's target, where the zone is served by several
        /// accounts (`accounts = [...]`).
        #[arg(long, default_value = "")]
        account: String,

        /// The external-dns `--txt-owner-id` that takes the records.
        #[arg(long = "to-external-dns", value_name = "OWNER")]
        to_external_dns: String,
        /// Only show what would be handed over; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Manage a released zone again (a full sync follows).
    Resume {
        #[command(flatten)]
        conn: Conn,
        zone: String,
        /// The account of the zone's target, where the zone is served by several
        /// accounts (`accounts = [...]`).
        #[arg(long, default_value = "")]
        account: String,
    },
    /// Make (or keep) a CA, server and client certificates and an admin token in a
    /// directory, as `up` makes in its state directory: for the compose demo.
    Certs {
        /// Where to write them.
        dir: std::path::PathBuf,
        /// A DNS name the servers are reached by (more than one may be given).
        #[arg(long = "name")]
        names: Vec<String>,
    },
    /// Serve a local emulator of a cloud DNS API, built to its documented semantics
    /// (docs/emulators.md), until Ctrl-C.
    Emulate {
        /// Which API.
        api: EmulatedApi,
        /// Where to serve it.
        #[arg(long, default_value = "127.0.0.1:4566")]
        listen: std::net::SocketAddr,
        /// The emulator's TOML config (credentials, quota, zones to create, faults).
        #[arg(long)]
        config: Option<std::path::PathBuf>,
    },
    /// Trigger a sync now and follow its progress.
    Sync {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        zone: Vec<String>,
        /// Only the zones' targets at this account (a zone served by several
        /// accounts has one target per account).
        #[arg(long, default_value = "")]
        account: String,

        #[command(flatten)]
        output: OutputArgs,
    },
    /// Print the shell completion script (bash: `source <(dnsplane completions bash)`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (dnsplane.1 and one per subcommand) into DIR, or print
    /// dnsplane(1) with every subcommand when no DIR is given.
    Man {
        /// Where to write the pages.
        dir: Option<std::path::PathBuf>,
    },
}

/// The APIs `dnsplane emulate` serves.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum EmulatedApi {
    /// AWS Route 53 (REST-XML under /2013-04-01, SigV4).
    Route53,
    /// Google Cloud DNS (JSON under /dns/v1, bearer tokens).
    Clouddns,
    /// Cloudflare's DNS API (JSON under /client/v4, API tokens, the batch endpoint).
    Cloudflare,
    /// Azure DNS's ARM API (public and private zones, record-set ETags, bearer tokens
    /// and an AAD-shaped token endpoint).
    Azure,
}

/// A client command piped into `head` or `less` that quits early ends as every Unix
/// tool does on SIGPIPE: quietly, exit 141. Rust ignores SIGPIPE, so the next
/// `println!` panics on the closed pipe instead (and resetting the signal needs
/// `unsafe`, which this workspace forbids). `up` and `emulate` keep the default hook:
/// they print little and serve sockets.
fn end_quietly_on_a_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> std::process::ExitCode {
    dnsplane_cli::tune_allocator();
    // Bad flags exit 1 (clap's own code, 2, means "not converged" here); --help and
    // --version exit 0.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                std::process::ExitCode::FAILURE
            } else {
                std::process::ExitCode::SUCCESS
            };
        }
    };
    if !matches!(cli.command, Command::Up(_) | Command::Emulate { .. }) {
        end_quietly_on_a_closed_stdout();
    }
    let runtime = match dnsplane_cli::runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dnsplane: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let run = async {
        // `up` runs the services: logs plus traces when OTEL_EXPORTER_OTLP_ENDPOINT is
        // set, flushed at the end. The other commands are clients: logs only.
        if matches!(cli.command, Command::Up(_)) {
            let telemetry = dnsplane_common::telemetry::init("dnsplane");
            let result = dispatch(cli.command).await;
            telemetry.shutdown().await;
            result
        } else {
            dnsplane_common::runtime::init_logging();
            dispatch(cli.command).await
        }
    };
    match runtime.block_on(run) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dnsplane: {}", dnsplane_cli::describe(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: Command) -> anyhow::Result<std::process::ExitCode> {
    match command {
        Command::Up(args) => up::up(args).await,
        Command::Plan {
            conn,
            zone,
            account,
            output,
            detailed_exitcode,
            desired: Some(path),
            format,
        } => {
            proposed::plan_desired(
                conn,
                zone,
                account,
                &path,
                format,
                Output::new(output),
                detailed_exitcode,
            )
            .await
        }
        Command::Plan {
            conn,
            zone,
            account,
            output,
            detailed_exitcode,
            desired: None,
            ..
        } => remote::plan(conn, zone, account, Output::new(output), detailed_exitcode).await,
        Command::Import(args) => import::import(args).await,
        Command::Export {
            conn,
            zone,
            account,
            format,
            observed,
        } => import::export(conn, zone, account, format, observed).await,
        Command::Adopt {
            conn,
            zone,
            account,
            dry_run,
            digest,
        } => import::adopt(conn, zone, account, dry_run, digest).await,
        Command::Status { conn, output } => remote::status(conn, Output::new(output)).await,
        Command::Records {
            conn,
            name,
            zone,
            account,
            all,
            output,
        } => {
            remote::records(
                conn,
                remote::RecordsQuery {
                    name: name.unwrap_or_default(),
                    zone,
                    account,
                    all,
                },
                Output::new(output),
            )
            .await
        }
        Command::Sync {
            conn,
            zone,
            account,
            output,
        } => sync::sync(conn, zone, account, Output::new(output)).await,
        Command::Completions { shell } => meta::completions::<Cli>(shell),
        Command::Man { dir } => meta::man::<Cli>(dir.as_deref()),
        Command::Approve {
            conn,
            zone,
            account,
            digest,
        } => act::approve(conn, zone, account, digest).await,
        Command::History {
            conn,
            name,
            zone,
            account,
            limit,
            output,
        } => history::history(conn, name, zone, account, limit, Output::new(output)).await,
        Command::Release {
            conn,
            zone,
            account,
            to_external_dns,
            dry_run,
        } => act::release(conn, zone, account, to_external_dns, dry_run).await,
        Command::Resume {
            conn,
            zone,
            account,
        } => act::resume(conn, zone, account).await,
        Command::Certs { dir, names } => secure::certs(&dir, &names),
        Command::Emulate {
            api,
            listen,
            config,
        } => {
            let served = match api {
                EmulatedApi::Route53 => dnsplane_emulate::run_route53(listen, config).await,
                EmulatedApi::Clouddns => dnsplane_emulate::run_clouddns(listen, config).await,
                EmulatedApi::Cloudflare => dnsplane_emulate::run_cloudflare(listen, config).await,
                EmulatedApi::Azure => dnsplane_emulate::run_azure(listen, config).await,
            };
            match served {
                Ok(()) => Ok(std::process::ExitCode::SUCCESS),
                Err(e) if e.is_config() => {
                    eprintln!("dnsplane emulate: {e}");
                    Ok(std::process::ExitCode::from(dnsplane_cli::EXIT_BAD_CONFIG))
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}
