//! The `grail` command.

mod bench;
mod bench_agent;
mod check;
mod feed;
mod fix;
mod format;
mod generate;
mod grammar;
mod input;
mod mask;
mod match_text;
mod next;
mod prefault;
mod render;
mod rules;
mod sample;
mod schema;
mod serve;
mod tools;

use std::process::ExitCode;

/// mimalloc: see Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

/// Grail: grammar-constrained generation. Check, format, fix, match and sample GBNF
/// grammars; convert JSON Schemas and tool registries to grammars; mask a vocabulary's
/// tokens; generate on a model and serve an OpenAI-compatible API, all held to the grammar.
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
    /// Fix what can be fixed mechanically: rule names with `_` (renamed with `-` everywhere),
    /// lines that start with `|` (joined to their rule), reversed ranges (ends swapped,
    /// escapes kept), repetitions over llama.cpp's 2000 (split into pieces it reads).
    ///
    /// Each fix is reported on stderr as `file:line: what changed`, and the fixed grammar
    /// is checked again before it is printed or written. Prints the fixed grammar to stdout
    /// unless --write or --check is given. Exit status: 0 when the fixed grammar is valid,
    /// 1 when errors are left (or, with --check, when something would be fixed), 2 on
    /// usage or I/O errors.
    Fix(fix::FixArgs),
    /// Match text against a grammar: where it broke and what was expected there.
    ///
    /// Exit status: 0 when the whole text matches (--prefix: when it can still be
    /// completed), 1 when it does not, 2 on grammar (or refused schema), usage or I/O errors.
    Match(match_text::MatchArgs),
    /// Show what may come after some text: CHAR, CHAR_EXCLUDE, TOKEN and END rules.
    ///
    /// Exit status: 0 when the text is a viable prefix, 1 when it is not, 2 on grammar
    /// (or refused schema), usage or I/O errors.
    Next(next::NextArgs),
    /// Print random strings of the grammar's language, one JSON string per line.
    Sample(sample::SampleArgs),
    /// Convert a JSON Schema to a GBNF grammar.
    ///
    /// Exit status: 0 when converted (warnings go to stderr), 1 when refused (each
    /// keyword Grail cannot enforce exactly is named with its JSON pointer; --lenient
    /// weakens them instead), 2 on usage errors or a file that is not JSON.
    Schema(schema::SchemaCommandArgs),
    /// Turn a tool registry into a tool-call grammar: each tool's name fixes its
    /// arguments, in the wire format the model writes.
    ///
    /// Exit status: 0 when made (warnings go to stderr), 1 when a tool's argument schema
    /// is refused (the tool, JSON pointer and keyword are named; --lenient weakens
    /// instead), 2 on usage errors or a registry that cannot be read.
    Tools(tools::ToolsArgs),
    /// Check a model's output against a tool registry: valid calls print as OpenAI
    /// `tool_calls`; otherwise the message to give the model back.
    ///
    /// Exit status: 0 when valid, 1 when not (the feedback message on stdout), 2 on usage
    /// errors or a registry that cannot be read.
    ValidateCall(tools::ValidateCallArgs),
    /// The grammar of a classification: exactly one of the labels (a router's choice:
    /// `grail classify CODE REASONING` prints `root ::= "CODE" | "REASONING"`).
    ///
    /// Exit status: 0 with the grammar, 2 on an empty or repeated label.
    Classify(tools::ClassifyArgs),
    /// List the tokens of a vocabulary the grammar allows after some text.
    ///
    /// Exit status: 0 when the text is a viable prefix, 1 when it is not, 2 on grammar
    /// (or refused schema), vocabulary, usage or I/O errors.
    Mask(mask::MaskArgs),
    /// Time token masks step by step on a document (--format json for scripts). `grail
    /// bench agent` (see `grail bench agent --help`) measures tool calling on a model:
    /// each query with and without the tool-call grammar.
    ///
    /// Exit status: 0 when every token of the document was in its mask, 1 otherwise,
    /// 2 on grammar (or refused schema), usage or I/O errors.
    Bench(bench::BenchArgs),
    /// Generate text on a model, constrained by a grammar, a JSON Schema or a tool
    /// registry (default model: the embedded SmolLM2-135M-Instruct, fetched once).
    ///
    /// Prints the output (with --tools: the validated OpenAI `tool_calls`). Exit status: 0
    /// with a valid output, 1 when the token limit cut the output off or no valid tool
    /// call came within the attempts, 2 on usage, grammar, model or I/O errors.
    Generate(generate::GenerateArgs),
    /// The embedded model: `grail model fetch` downloads and checks it once.
    Model(generate::ModelArgs),
    /// An OpenAI-compatible server (`POST /v1/chat/completions` with tools, tool_choice,
    /// response_format and grammar, all enforced together; `GET /v1/models`, `GET
    /// /health`) in front of the embedded model, a llama-server or a vLLM server.
    ///
    /// Runs until SIGINT or SIGTERM (in-flight requests finish). Exit status: 0 after a
    /// shutdown, 2 on usage errors or when the address cannot be bound.
    Serve(serve::ServeArgs),
}

// `grail bench agent`, parsed on its own: `grail bench` takes the mask-timing arguments,
// and a subcommand beside required arguments is more than clap's derive can say.
#[derive(Debug, Parser)]
#[command(
    name = "grail bench agent",
    bin_name = "grail bench agent",
    version,
    about = "Tool calling on a model: each query with and without the tool-call grammar; convergence (a valid call of an acceptable tool), first-tool match, latency and tokens/s as a table (and JSON)."
)]
struct AgentBenchCli {
    #[command(flatten)]
    args: bench_agent::AgentBenchArgs,
}

/// Exit status for usage and I/O errors, as clap uses for bad arguments.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if arguments.get(1).is_some_and(|arg| arg == "bench")
        && arguments.get(2).is_some_and(|arg| arg == "agent")
    {
        let cli = AgentBenchCli::parse_from(arguments.into_iter().skip(2));
        return finish(bench_agent::run(&cli.args));
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Fmt(args) => format::run(&args),
        Command::Fix(args) => fix::run(&args),
        Command::Match(args) => match_text::run(&args),
        Command::Next(args) => next::run(&args),
        Command::Sample(args) => sample::run(&args),
        Command::Schema(args) => schema::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Mask(args) => mask::run(&args),
        Command::Tools(args) => tools::run_tools(&args),
        Command::ValidateCall(args) => tools::run_validate(&args),
        Command::Classify(args) => tools::run_classify(&args),
        Command::Generate(args) => generate::run_generate(&args),
        Command::Model(args) => generate::run_model(&args),
        Command::Serve(args) => serve::run(&args),
    };
    finish(result)
}

/// The exit status of a command's result (errors printed, as usage errors).
fn finish(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Ends the process quietly when the reader of its output goes away (`grail schema s.json
/// | head`), as Unix tools do, rather than panicking in `println!`: Rust ignores SIGPIPE
/// by default, this restores the default action.
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; setting a
    // signal's action to the default has no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
