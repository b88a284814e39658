//! The `grail` command.

mod check;
mod format;
mod input;
mod render;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Grail: grammar-constrained generation. Check and format GBNF grammars.
#[derive(Debug, Parser)]
#[command(name = "grail", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a GBNF grammar: every error and warning, with where and how to fix it.
    ///
    /// Exit status: 0 when the grammar is valid (warnings go to stderr), 1 when it is
    /// not, 2 on usage or I/O errors.
    Check(check::CheckArgs),
    /// Format GBNF grammars canonically, keeping comments.
    ///
    /// Prints the formatted grammar to stdout unless --write or --check is given.
    /// Exit status: 0 on success, 1 when a grammar does not parse or (--check) is not
    /// formatted, 2 on usage or I/O errors.
    Fmt(format::FmtArgs),
}

/// Exit status for usage and I/O errors, as clap uses for bad arguments.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Fmt(args) => format::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
