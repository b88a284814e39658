//! `grail serve` as a process: a model that cannot be loaded ends it with the reason and
//! a failing exit status, instead of answering "loading" forever.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_model_that_cannot_be_loaded_ends_serve_with_its_reason() {
    let path =
        std::env::temp_dir().join(format!("grail-serve-corrupt-{}.gguf", std::process::id()));
    // The GGUF magic, then nonsense.
    let mut bytes = b"GGUF".to_vec();
    bytes.extend((0..4096u32).map(|index| (index.wrapping_mul(2_654_435_761) >> 13) as u8));
    std::fs::write(&path, &bytes).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_grail"))
        .args(["serve", "--addr", "127.0.0.1:0", "--quiet", "--model"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("grail serve still runs with a corrupt model");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("the model could not be loaded"), "{stderr}");
    assert!(stderr.contains("grail-serve-corrupt"), "{stderr}");
}

/// Sends `request` to 127.0.0.1:`port` and returns the status code.
fn status_of(port: u16, request: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"))
}

#[test]
fn the_api_key_comes_from_grail_api_key_and_sigterm_ends_serve_with_0() {
    use std::io::BufRead;
    // A remote backend that is down: the server needs no model to answer /v1/models.
    let mut child = Command::new(env!("CARGO_BIN_EXE_grail"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--quiet",
            "--backend",
            "llama-server=http://127.0.0.1:9",
        ])
        .env("GRAIL_API_KEY", "key-from-the-environment")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let models = |key: &str| {
        status_of(
            port,
            &format!(
                "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n"
            ),
        )
    };
    assert_eq!(models("wrong"), 401);
    assert_eq!(models("key-from-the-environment"), 200);
    // SAFETY: `kill` on the id of a child this test started and has not reaped.
    let signalled = unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(signalled, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("grail serve still runs after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}
