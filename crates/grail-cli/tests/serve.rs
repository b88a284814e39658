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
