//! The vectors of a persistent `TantivyIndex`, kept beside the tantivy directory so that a
//! reopen needs no re-embedding: an append-only log of upserts and removals, one generation
//! file at a time (`vectors-<gen>.log`). Each commit appends the operations since the last one
//! and records the file name and its valid length in the tantivy commit payload; bytes past
//! that length (a crash between the append and the commit) are ignored on load. When the log
//! holds mostly dead entries it is rewritten as a new generation, named by the next commit.
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use mnemo_core::{CoreError, MemoryId, Namespace, Result};

use crate::vector::{FlatVectors, VectorIndex};

const MAGIC: &[u8; 8] = b"MNVEC1\n\0";
const OP_UPSERT: u8 = 1;
const OP_REMOVE: u8 = 2;

/// One change to the vectors, pending until the next commit.
#[derive(Clone, Debug, PartialEq)]
pub enum VecOp {
    /// Set the vector of an id.
    Upsert(Namespace, MemoryId, Vec<f32>),
    /// Drop the vector of an id.
    Remove(MemoryId),
}

/// The file name of a generation.
pub fn file_name(generation: u64) -> String {
    format!("vectors-{generation}.log")
}

fn io(path: &Path, what: &str, e: std::io::Error) -> CoreError {
    CoreError::Index(format!("{}: {what}: {e}", path.display()))
}

fn encode(op: &VecOp, out: &mut Vec<u8>) {
    match op {
        VecOp::Upsert(ns, id, v) => {
            out.push(OP_UPSERT);
            out.extend_from_slice(&id.0.to_le_bytes());
            let nb = ns.as_str().as_bytes();
            // Namespaces are at most 128 bytes (validated by Namespace::new).
            out.push(nb.len() as u8);
            out.extend_from_slice(nb);
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        VecOp::Remove(id) => {
            out.push(OP_REMOVE);
            out.extend_from_slice(&id.0.to_le_bytes());
        }
    }
}

/// Create a new generation holding every vector of `vectors`; returns its length in bytes.
pub fn write_generation(dir: &Path, generation: u64, vectors: &FlatVectors) -> Result<u64> {
    let path = dir.join(file_name(generation));
    let f = File::create(&path).map_err(|e| io(&path, "cannot create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let mut len = MAGIC.len() as u64;
    w.write_all(MAGIC).map_err(|e| io(&path, "cannot write", e))?;
    let mut buf = Vec::new();
    for (ns, id, v) in vectors.iter() {
        buf.clear();
        encode(&VecOp::Upsert(ns.clone(), id, v.to_vec()), &mut buf);
        w.write_all(&buf).map_err(|e| io(&path, "cannot write", e))?;
        len += buf.len() as u64;
    }
    let f = w.into_inner().map_err(|e| io(&path, "cannot write", e.into_error()))?;
    f.sync_all().map_err(|e| io(&path, "cannot sync", e))?;
    Ok(len)
}

/// Append `ops` to the generation file whose valid length is `len`; returns the new length.
/// Bytes past `len` (left by a crash before a commit) are cut first.
pub fn append(dir: &Path, generation: u64, len: u64, ops: &[VecOp]) -> Result<u64> {
    let path = dir.join(file_name(generation));
    let f = OpenOptions::new().write(true).open(&path).map_err(|e| io(&path, "cannot open", e))?;
    f.set_len(len).map_err(|e| io(&path, "cannot truncate", e))?;
    let mut buf = Vec::new();
    for op in ops {
        encode(op, &mut buf);
    }
    let mut f = f;
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(len)).map_err(|e| io(&path, "cannot seek", e))?;
    f.write_all(&buf).map_err(|e| io(&path, "cannot append", e))?;
    f.sync_data().map_err(|e| io(&path, "cannot sync", e))?;
    Ok(len + buf.len() as u64)
}

/// Replay the first `len` bytes of a generation into `vectors`.
pub fn load(dir: &Path, generation: u64, len: u64, vectors: &mut FlatVectors) -> std::result::Result<(), String> {
    let path: PathBuf = dir.join(file_name(generation));
    let mut f = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut data = Vec::new();
    f.read_to_end(&mut data).map_err(|e| format!("{}: {e}", path.display()))?;
    if (data.len() as u64) < len {
        return Err(format!("{}: {} bytes, but the last commit covers {len}", path.display(), data.len()));
    }
    data.truncate(len as usize);
    if data.get(..MAGIC.len()) != Some(&MAGIC[..]) {
        return Err(format!("{}: not a Mnemo vector log", path.display()));
    }
    let bad = |at: usize, what: &str| format!("{}: corrupt at byte {at}: {what}", path.display());
    let mut at = MAGIC.len();
    let take = |at: &mut usize, n: usize| -> Option<&[u8]> {
        let s = data.get(*at..*at + n)?;
        *at += n;
        Some(s)
    };
    while at < data.len() {
        let start = at;
        let op = take(&mut at, 1).ok_or_else(|| bad(start, "truncated"))?[0];
        let id = take(&mut at, 8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_le_bytes)
            .ok_or_else(|| bad(start, "truncated id"))?;
        match op {
            OP_UPSERT => {
                let n = take(&mut at, 1).ok_or_else(|| bad(start, "truncated namespace"))?[0] as usize;
                let nsb = take(&mut at, n).ok_or_else(|| bad(start, "truncated namespace"))?;
                let ns = std::str::from_utf8(nsb)
                    .ok()
                    .and_then(|s| Namespace::new(s).ok())
                    .ok_or_else(|| bad(start, "bad namespace"))?;
                let dims = take(&mut at, 4)
                    .and_then(|b| b.try_into().ok())
                    .map(u32::from_le_bytes)
                    .ok_or_else(|| bad(start, "truncated dims"))? as usize;
                let raw = take(&mut at, dims * 4).ok_or_else(|| bad(start, "truncated vector"))?;
                let v: Vec<f32> = raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                vectors.upsert(&ns, MemoryId(id), &v).map_err(|e| bad(start, &e.to_string()))?;
            }
            OP_REMOVE => {
                vectors.remove(MemoryId(id));
            }
            other => return Err(bad(start, &format!("unknown op {other}"))),
        }
    }
    Ok(())
}

/// Remove every vector generation file in `dir` except `keep`.
pub fn remove_other_generations(dir: &Path, keep: Option<u64>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let generation =
            name.strip_prefix("vectors-").and_then(|s| s.strip_suffix(".log")).and_then(|s| s.parse::<u64>().ok());
        if let Some(g) = generation {
            if Some(g) != keep {
                // Best effort: a leftover file is ignored on load and removed next time.
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trip_ignores_bytes_past_the_commit_and_rejects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let ns = Namespace::new("a").unwrap();
        let mut v = FlatVectors::new();
        v.upsert(&ns, MemoryId(1), &[1.0, 0.0]).unwrap();
        let len = write_generation(dir.path(), 3, &v).unwrap();
        let len2 = append(
            dir.path(),
            3,
            len,
            &[VecOp::Upsert(ns.clone(), MemoryId(2), vec![0.0, 1.0]), VecOp::Remove(MemoryId(1))],
        )
        .unwrap();
        // An append never committed: ignored by a load of len2.
        append(dir.path(), 3, len2, &[VecOp::Remove(MemoryId(2))]).unwrap();
        let mut back = FlatVectors::new();
        load(dir.path(), 3, len2, &mut back).unwrap();
        assert_eq!(back.len(), 1);
        assert!(back.contains(MemoryId(2)) && !back.contains(MemoryId(1)));
        let mut short = FlatVectors::new();
        assert!(load(dir.path(), 3, len2 + 10_000, &mut short).unwrap_err().contains("covers"));
        std::fs::write(dir.path().join(file_name(4)), b"garbage!garbage").unwrap();
        assert!(load(dir.path(), 4, 15, &mut short).unwrap_err().contains("not a Mnemo vector log"));
        remove_other_generations(dir.path(), Some(3));
        assert!(!dir.path().join(file_name(4)).exists() && dir.path().join(file_name(3)).exists());
    }
}
