//! `nikaia`: the command-line tool around nikaia_std.

use clap::Parser;

/// The Nikaia tool: serve files, audit roots, explain a running server.
#[derive(Parser, Debug)]
#[command(name = "nikaia", version, about, long_about = None)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
}
