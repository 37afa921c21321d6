//! `nikaia`: the command-line tool around nikaia_std.

mod check;
mod compress;
mod domain;
mod explain;
use nikaia_cli::nk;
mod serve;
mod stubtest;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The Nikaia tool: serve files, audit roots, explain a running server.
#[derive(Parser, Debug)]
#[command(
    name = "nikaia",
    version,
    about,
    long_about = None,
    arg_required_else_help = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    /// List every site that constructs `fs::Root::Anywhere` in the `.rs` and
    /// `.nk` files under the PATHs
    #[arg(long)]
    trust: bool,

    /// With --trust: the files and directories to read (default `.`)
    #[arg(value_name = "PATH", requires = "trust")]
    paths: Vec<PathBuf>,

    /// With --trust: write the sites as JSON
    #[arg(long, requires = "trust")]
    json: bool,

    /// With --trust: exit with status 1 when any site is found (a CI gate)
    #[arg(long, requires = "trust")]
    deny: bool,

    /// With --trust: take the audited items from the stubs in DIR instead
    /// of the stubs built into this binary
    #[arg(long, value_name = "DIR", requires = "trust")]
    stubs: Option<PathBuf>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a directory over HTTP (default: the current directory)
    Serve(serve::ServeArgs),
    /// Show what a running server's std decided: vehicles, kept-table hits, Anywhere sites
    Explain(explain::ExplainArgs),
    /// Write the precompressed sidecars (NAME.br, NAME.zst, NAME.gz) that are missing or stale under DIR
    Compress(compress::CompressArgs),
    /// Validate a runtime file and print the effective configuration
    Check {
        /// The runtime file (TOML)
        file: PathBuf,
        /// The directory `nikaia serve` would serve with it (default: the
        /// current directory): where `[resumable] dir` must not be, and
        /// whose file system it must share
        dir: Option<PathBuf>,
        /// `--domain` and `--staging`, as `nikaia serve` would take them
        /// with this file.
        #[command(flatten)]
        domains: domain::DomainArgs,
    },
    /// Check the stubs (spec/std/*.nk) against nikaia_std's Rust source, both ways
    Stubtest(StubtestArgs),
}

#[derive(clap::Args, Debug)]
struct StubtestArgs {
    /// The directory of stub files
    #[arg(long, value_name = "DIR", default_value = "spec/std")]
    stubs: PathBuf,
    /// The nikaia_std crate's directory (its src/lib.rs is read)
    #[arg(long = "crate", value_name = "DIR", default_value = "nikaia_std")]
    krate: PathBuf,
    /// The allowlist (default: stubtest-allowlist.txt in the stubs directory)
    #[arg(long, value_name = "FILE")]
    allowlist: Option<PathBuf>,
    /// Write the errors as JSON
    #[arg(long)]
    json: bool,
    /// Print the stubs' normalized surface, one declaration a line, and check nothing
    #[arg(long)]
    surface: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let status = match cli.command {
        Some(Command::Serve(args)) => serve::run(args),
        Some(Command::Check { file, dir, domains }) => {
            check::run(&file, &dir.unwrap_or_else(|| ".".into()), &domains)
        }
        Some(Command::Compress(args)) => compress::run(args),
        Some(Command::Explain(args)) => explain::run(args),
        Some(Command::Stubtest(args)) => stubtest::run(stubtest::Options {
            stubs: args.stubs,
            krate: args.krate,
            allowlist: args.allowlist,
            json: args.json,
            surface: args.surface,
        }),
        None if cli.trust => trust::run(trust::Options {
            paths: cli.paths,
            stubs: cli.stubs,
            json: cli.json,
            deny: cli.deny,
        }),
        None => 2,
    };
    ExitCode::from(status)
}
