//! `grail serve`: the OpenAI-compatible server (crate `grail-server`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use grail_server::{
    AppState, Backend, EmbeddedBackend, EmbeddedOptions, PlanSettings, RemoteBackend, RemoteKind,
    ServeError, ServerSettings,
};
use grail_tools::{Think, WireFormat};

use crate::tools::WireArg;

use crate::generate::{
    DEFAULT_CONTEXT, DEFAULT_REPEAT_PENALTY, ensure_default_model, load_batch_model,
};

/// Arguments of `grail serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen (loopback by default; another address should come with --api-key).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// What writes the answers: `embedded` (a model in this process), `llama-server=URL`
    /// (a llama-server, sent Grail's grammars), `openai=URL` (an OpenAI-compatible
    /// server that takes a grammar in `structured_outputs`, as vLLM does), or
    /// `vllm-grail=URL` (a vLLM with Grail's logits processor installed: the grammar goes
    /// to Grail's engine there, in `vllm_xargs`).
    #[arg(long, default_value = "embedded")]
    backend: String,
    /// The GGUF model of the embedded backend (default: the embedded SmolLM2, fetched
    /// once); with a remote backend, the model name sent upstream.
    #[arg(long)]
    model: Option<String>,
    /// Requests must send `Authorization: Bearer KEY`. A key on the command line is
    /// visible to every local user in `ps`: prefer the GRAIL_API_KEY environment variable.
    #[arg(long, env = "GRAIL_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The key sent to a remote backend (visible in `ps` when given here: prefer the
    /// GRAIL_BACKEND_API_KEY environment variable).
    #[arg(long, env = "GRAIL_BACKEND_API_KEY", hide_env_values = true)]
    backend_api_key: Option<String>,
    /// A `Host` name to accept besides localhost and the listening address (repeatable;
    /// `*`: any). Browsers' requests for other names are refused (DNS rebinding).
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// An `Origin` (`https://app.example`) whose pages may call this server, besides
    /// pages of accepted hosts (repeatable; `*`: any).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// The embedded model's context, in tokens (prompt and answer together), per answer.
    #[arg(long, default_value_t = DEFAULT_CONTEXT)]
    context: u32,
    /// Answers the embedded model writes at once, in one batch per step (default: four
    /// per core, at most 16). Each takes up to 2,048 tokens of attention cache by
    /// default (SmolLM2: about 46 MB).
    #[arg(long, value_name = "N")]
    parallel: Option<usize>,
    /// Draw every token, even those the grammar forces (see `grail generate --help`).
    #[arg(long)]
    no_jump_forward: bool,
    /// Give each answer its own share of the attention cache (each token attends to its
    /// own answer's cells only; a shared prompt prefix is copied, and an answer may use
    /// at most its share) instead of one cache for all.
    #[arg(long)]
    split_cache: bool,
    /// The wire format the model writes tool calls in (the server turns them into
    /// OpenAI `tool_calls`); `auto`: the one the embedded model's chat template teaches.
    #[arg(long, default_value = "openai", value_parser = WireArg::parser())]
    wire: WireArg,
    /// A reasoning block before answers with tools and unconstrained text answers, for
    /// thinking models: `optional` (`<think>…</think>` may come first), `required` (it
    /// must), `forced` (the chat template's generation prompt opens `<think>`), or `off`.
    /// Its text is returned as `reasoning_content`.
    #[arg(
        long,
        default_value = "off",
        value_name = "off|optional|required|forced"
    )]
    think: Think,
    /// `max_tokens` when a request gives none.
    #[arg(long, default_value_t = 512)]
    default_max_tokens: usize,
    /// The most `max_tokens` a request may ask for.
    #[arg(long, default_value_t = 4096)]
    max_tokens_limit: usize,
    /// The temperature when a request gives none (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// The repeat penalty (1.0: off; see `grail generate --help`).
    #[arg(long, default_value_t = DEFAULT_REPEAT_PENALTY)]
    repeat_penalty: f32,
    /// Attempts per answer when the validator refuses one (the first included).
    #[arg(long, default_value_t = 3)]
    max_attempts: usize,
    /// Request grammars kept for later requests with the same tools and formats: those
    /// skip building and compiling, and their masks start from what earlier requests
    /// learned (0: keep none).
    #[arg(long, default_value_t = grail_server::grammar_cache::DEFAULT_GRAMMAR_CACHE_ENTRIES)]
    grammar_cache: usize,
    /// Compiled grammar nodes the kept grammars may hold in all (about 100-200 bytes a
    /// node; least recently used out first).
    #[arg(long, default_value_t = grail_server::grammar_cache::DEFAULT_GRAMMAR_CACHE_NODES)]
    grammar_cache_nodes: usize,
    /// The largest request body, in bytes.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    max_body_bytes: usize,
    /// The longest a request may take, in seconds, queueing included.
    #[arg(long, default_value_t = 300)]
    request_timeout: u64,
    /// The most requests waiting for the embedded model (more: HTTP 503); as many may
    /// wait to be planned.
    #[arg(long, default_value_t = 64)]
    queue: usize,
    /// The longest a request's head may take to arrive, in seconds, idle time between
    /// requests included (longer: the connection is closed).
    #[arg(long, default_value_t = 10)]
    header_timeout: u64,
    /// The longest a request's body may take to arrive, in seconds (longer: HTTP 408).
    #[arg(long, default_value_t = 60)]
    body_timeout: u64,
    /// The most connections open at once (more: HTTP 503 and closed).
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// Requests planned at once (grammars built and compiled; each takes memory in
    /// proportion to its grammar).
    #[arg(long, default_value_t = 2)]
    planning_slots: usize,
    /// The most messages in a request (checked before the chat template is rendered).
    #[arg(long, default_value_t = grail_server::plan::DEFAULT_MAX_MESSAGES)]
    max_messages: usize,
    /// The longest `grammar` a request may send, in bytes.
    #[arg(long, default_value_t = grail_server::plan::DEFAULT_MAX_GRAMMAR_BYTES)]
    max_grammar_bytes: usize,
    /// The most nodes a request's compiled grammar may have (about 16 bytes each;
    /// tools, schemas and grammars alike).
    #[arg(long, default_value_t = grail_server::plan::DEFAULT_MAX_GRAMMAR_NODES)]
    max_grammar_nodes: usize,
    /// No request log lines on standard error.
    #[arg(long)]
    quiet: bool,
}

/// The wire format of `--wire`, `auto` read from the chat template of the embedded
/// model at `model` (a remote backend's template is not at hand).
fn wire_format(wire: WireArg, model: Option<&Path>) -> anyhow::Result<WireFormat> {
    let WireArg::Auto = wire else {
        return Ok(wire.resolve(None).0);
    };
    let Some(model) = model else {
        bail!(
            "--wire auto reads the embedded model's chat template; with a remote backend, name the format ({})",
            WireFormat::ALL.map(WireFormat::label).join(", ")
        );
    };
    let template = grail_vocab::chat_template_of_gguf(model)
        .map_err(|error| anyhow::anyhow!("--wire auto: {error}"))?;
    let (format, detected) = wire.resolve(template.as_deref());
    eprintln!(
        "wire: {} ({})",
        format.label(),
        match detected {
            true => "detected from the model's chat template",
            false => "the model's chat template shows no call format Grail knows",
        }
    );
    Ok(format)
}

/// The embedded model's special tokens among `wire`'s markers (read from the GGUF's
/// vocabulary), for the tool-call grammar to write as tokens.
fn marker_tokens(wire: WireFormat, model: &Path) -> anyhow::Result<Vec<(String, u32)>> {
    let vocabulary = grail_vocab::from_gguf(model).map_err(|error| {
        anyhow::anyhow!("the model could not be loaded: its vocabulary: {error}")
    })?;
    Ok(wire.marker_tokens(|text| vocabulary.special_id_of_text(text)))
}

/// The remote backend a `--backend LABEL=URL` names.
fn remote_kind(label: &str) -> Option<RemoteKind> {
    match label {
        "llama-server" => Some(RemoteKind::LlamaServer),
        "openai" => Some(RemoteKind::OpenAiCompatible),
        "vllm-grail" => Some(RemoteKind::VllmGrail),
        _ => None,
    }
}

/// The default of `--parallel`: four answers per core (a step's batch costs little more
/// than one answer's on a small model, whose weights are read once per step), at most 16.
fn default_parallel() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |cores| cores.get() * 4)
        .clamp(1, 16)
}

/// Runs `grail serve`.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    ignore_closed_sockets();
    if args.max_attempts == 0 {
        bail!("--max-attempts must be at least 1");
    }
    if args.default_max_tokens == 0 || args.default_max_tokens > args.max_tokens_limit {
        bail!("--default-max-tokens must be between 1 and --max-tokens-limit");
    }
    if !args.addr.ip().is_loopback() && args.api_key.is_none() {
        eprintln!(
            "warning: listening on {} without an API key: anyone who can reach it can use the model (set --api-key or GRAIL_API_KEY)",
            args.addr
        );
    }
    let timeout = Duration::from_secs(args.request_timeout.max(1));
    let embedded_model = match args.backend.as_str() {
        "embedded" => Some(match &args.model {
            Some(path) => PathBuf::from(path),
            None => ensure_default_model()?,
        }),
        _ => None,
    };
    let wire = wire_format(args.wire, embedded_model.as_deref())?;
    let special_tokens = match &embedded_model {
        Some(path) => marker_tokens(wire, path)?,
        None => Vec::new(),
    };
    let backend: Arc<dyn Backend> = match args.backend.split_once('=') {
        None if args.backend == "embedded" => {
            let path = embedded_model.expect("read above for the embedded backend");
            let id = path.file_stem().map_or_else(
                || "model".to_string(),
                |stem| stem.to_string_lossy().into_owned(),
            );
            let context = args.context;
            let parallel = args.parallel.unwrap_or_else(default_parallel);
            let unified = !args.split_cache;
            let load = Box::new(move || {
                load_batch_model(&path, context, parallel, unified)
                    .map_err(|error| format!("{error:#}"))
            });
            let options = EmbeddedOptions {
                queue: args.queue,
                jump_forward: !args.no_jump_forward,
            };
            Arc::new(EmbeddedBackend::start(id, load, options))
        }
        Some((label, url)) if remote_kind(label).is_some() => Arc::new(RemoteBackend::new(
            remote_kind(label).expect("checked by the guard"),
            url,
            args.model.clone(),
            args.backend_api_key.clone(),
            timeout,
        )),
        _ => bail!(
            "--backend `{}` is unknown; use embedded, llama-server=URL, openai=URL or vllm-grail=URL",
            grail_server::remote::url_without_credentials(&args.backend)
        ),
    };
    let settings = ServerSettings {
        api_key: args.api_key.clone(),
        max_body_bytes: args.max_body_bytes,
        request_timeout: timeout,
        max_attempts: args.max_attempts,
        log_requests: !args.quiet,
        grammar_cache_entries: args.grammar_cache,
        grammar_cache_nodes: args.grammar_cache_nodes,
        header_timeout: Duration::from_secs(args.header_timeout.max(1)),
        body_timeout: Duration::from_secs(args.body_timeout.max(1)),
        max_connections: args.max_connections.max(1),
        planning_slots: args.planning_slots.max(1),
        planning_queue: args.queue.max(1),
        allowed_hosts: args.allowed_hosts.clone(),
        allowed_origins: args.allowed_origins.clone(),
        plan: PlanSettings {
            wire,
            think: args.think,
            default_max_tokens: args.default_max_tokens,
            max_tokens_limit: args.max_tokens_limit,
            default_temperature: args.temperature,
            repeat_penalty: args.repeat_penalty,
            max_messages: args.max_messages,
            max_grammar_bytes: args.max_grammar_bytes,
            max_grammar_nodes: args.max_grammar_nodes,
            special_tokens,
            ..PlanSettings::default()
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let ended = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let address = listener.local_addr()?;
        eprintln!(
            "grail serve: listening on http://{address} (backend: {}, model: {}); GET /health answers 200 once the model is ready",
            grail_server::remote::url_without_credentials(&args.backend),
            backend.model_id()
        );
        let state = AppState::new(backend.clone(), settings);
        let watcher = backend.clone();
        tokio::spawn(async move {
            while !watcher.ready() {
                if watcher.failure().is_some() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            eprintln!("grail serve: ready");
        });
        match grail_server::serve(listener, state, shutdown_signal()).await {
            Ok(()) => {
                eprintln!("grail serve: stopped (in-flight requests finished)");
                anyhow::Ok(ExitCode::SUCCESS)
            }
            // The reason is logged already ("the model could not be loaded: …").
            Err(ServeError::Backend(_)) => anyhow::Ok(ExitCode::FAILURE),
            Err(error) => Err(error.into()),
        }
    });
    // The drain is over: answers a backend still holds (past their deadline) are not
    // waited for.
    runtime.shutdown_timeout(Duration::from_secs(2));
    ended
}

/// Ignores SIGPIPE again (`main` restores its default action for the other commands'
/// output): hyper writes responses with `writev`, which has no `MSG_NOSIGNAL`, so a
/// client that hangs up mid-answer would otherwise end the whole process, silently.
fn ignore_closed_sockets() {
    #[cfg(unix)]
    // SAFETY: called first thing in `run`, before the server starts any thread; setting
    // a signal's action to "ignore" has no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    eprintln!("grail serve: shutting down; new requests are answered 503, in-flight ones finish");
}
