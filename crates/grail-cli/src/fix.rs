//! `grail fix`: the mechanical repairs of `grail_grammar::fix`, reported like `cargo fix`
//! (`file:line: what changed`), the fixed grammar checked again before it is written.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use grail_grammar::{CheckOptions, Target, check, fix};
use grail_syntax::{Diagnostic, Severity, source_from_bytes};

use crate::check::TargetArg;
use crate::input::read_source;
use crate::render::{render_human, render_invalid_utf8, stderr_wants_color, summary};

/// Arguments of `grail fix`.
#[derive(Debug, Args)]
pub struct FixArgs {
    /// Grammar files, or `-` for standard input.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Report what would be fixed (exit 1 when something would) instead of printing the
    /// fixed grammars.
    #[arg(long)]
    pub check: bool,
    /// Rewrite the files in place.
    #[arg(long, conflicts_with = "check")]
    pub write: bool,
    /// The engine the fixed grammar is checked for (the repairs are the same).
    #[arg(long, value_enum, default_value_t = TargetArg::Grail)]
    pub target: TargetArg,
}

/// Runs `grail fix`.
pub fn run(args: &FixArgs) -> anyhow::Result<ExitCode> {
    if args.write && args.files.iter().any(|file| file.as_os_str() == "-") {
        bail!("--write cannot rewrite standard input");
    }
    let options = CheckOptions {
        target: match args.target {
            TargetArg::Grail => Target::Grail,
            TargetArg::LlamaCpp => Target::LlamaCpp,
        },
        ..CheckOptions::default()
    };
    let mut failed = false;
    for file in &args.files {
        let input = read_source(file)?;
        let source = match source_from_bytes(&input.bytes) {
            Ok(source) => source,
            Err(error) => {
                eprint!("{}", render_invalid_utf8(&input.name, &input.bytes, &error));
                failed = true;
                continue;
            }
        };
        let fixed = fix(source);
        for repair in &fixed.fixes {
            eprintln!("{}:{}: {}", input.name, repair.line, repair.kind);
        }
        for repair in &fixed.declined {
            eprintln!(
                "{}:{}: not fixed, since the text with it would read as a different grammar (an error near it? fix that first): would have {}",
                input.name, repair.line, repair.kind
            );
        }
        // The fixed text, checked again: what is left to do by hand.
        let report = check(&fixed.source, &options);
        let errors: Vec<Diagnostic> = report
            .diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.severity == Severity::Error)
            .cloned()
            .collect();
        eprint!(
            "{}",
            render_human(&input.name, &fixed.source, &errors, stderr_wants_color())
        );
        let count = fixed.fixes.len();
        let fixes = match count {
            0 => "nothing to fix".to_string(),
            1 => "1 fix".to_string(),
            _ => format!("{count} fixes"),
        };
        let left = summary(&report.diagnostics);
        let done = match (count, args.check, args.write) {
            (0, ..) => "",
            (_, true, _) => " to make",
            (_, _, true) => " written",
            _ => "",
        };
        let state = if report.is_ok() {
            if left.is_empty() {
                "the grammar checks".to_string()
            } else {
                format!("the grammar checks ({left}; see `grail check`)")
            }
        } else {
            failed = true;
            format!("{left} left to fix by hand")
        };
        eprintln!("{}: {fixes}{done}; {state}", input.name);
        if args.check {
            failed |= count > 0;
        } else if args.write {
            if fixed.source != source {
                write_replacing(file, &fixed.source)?;
            }
        } else {
            print!("{}", fixed.source);
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes `text` to `path` through a temporary file beside it renamed over it (with the
/// file's permissions), so a failed write leaves the old file whole.
fn write_replacing(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".grail-fix.tmp");
    let temporary = std::path::PathBuf::from(temporary);
    std::fs::write(&temporary, text)
        // The file keeps its permissions.
        .and_then(|()| std::fs::set_permissions(&temporary, std::fs::metadata(path)?.permissions()))
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|error| {
            let _ = std::fs::remove_file(&temporary);
            anyhow::anyhow!("cannot write `{}`: {error}", path.display())
        })
}
