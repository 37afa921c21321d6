//! `nikaia`: the command-line tool around nikaia_std.

use clap::{Parser, Subcommand};

mod serve;

/// The Nikaia tool: serve files, audit roots, explain a running server.
#[derive(Parser, Debug)]
#[command(name = "nikaia", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a directory over HTTP (default: the current directory).
    Serve(serve::ServeArgs),
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Serve(args) => serve::run(args),
    };
    std::process::exit(code);
}
