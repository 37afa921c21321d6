//! `nikaia`: the command-line tool around nikaia_std.

mod check;
mod explain;
mod serve;
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

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a directory over HTTP (default: the current directory)
    Serve(serve::ServeArgs),
    /// Show what a running server's std decided: vehicles, kept-table hits, Anywhere sites
    Explain(explain::ExplainArgs),
    /// Validate a runtime file and print the effective configuration
    Check {
        /// The runtime file (TOML)
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let status = match cli.command {
        Some(Command::Serve(args)) => serve::run(args),
        Some(Command::Check { file }) => check::run(&file),
        Some(Command::Explain(args)) => explain::run(args),
        None if cli.trust => trust::run(trust::Options {
            paths: cli.paths,
            json: cli.json,
            deny: cli.deny,
        }),
        None => 2,
    };
    ExitCode::from(status)
}
