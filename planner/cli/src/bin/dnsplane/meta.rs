//! `dnsplane completions SHELL` and `dnsplane man [DIR]`: made from the same clap
//! definition as the commands, so they never drift from them.
use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;

pub fn completions<C: clap::CommandFactory>(
    shell: clap_complete::Shell,
) -> anyhow::Result<ExitCode> {
    let mut cmd = C::command();
    clap_complete::generate(shell, &mut cmd, "dnsplane", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// Without a directory, dnsplane(1) on stdout (its SUBCOMMANDS section names each
/// subcommand); with one, that page and a page per subcommand (`dnsplane-status.1`, …).
pub fn man<C: clap::CommandFactory>(dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let cmd = C::command();
    match dir {
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?,
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("man: cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir)
                .with_context(|| format!("man: cannot write the pages into {}", dir.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
