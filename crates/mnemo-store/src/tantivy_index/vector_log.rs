//! The vectors of a persistent `TantivyIndex`, kept beside the tantivy directory so that a
//! reopen needs no re-embedding: an append-only log of upserts and removals, one generation
//! file at a time (`vectors-<gen>.log`). Each commit appends the operations since the last one
//! and records the file name and its valid length in the tantivy commit payload; bytes past
//! that length (a crash between the append and the commit) are ignored on load. When the log
//! holds mostly dead entries it is rewritten as a new generation, named by the next commit.
//!
//! The IVF of a big namespace persists in the same log, so a reopen neither retrains nor
//! reassigns: a training writes the centroids and every vector's list (`OP_IVF`), each later
//! upsert into that namespace carries its list (`OP_UPSERT_LISTED`), and dropping the IVF is
//! `OP_IVF_DROP`. Ops 1 and 2 are the original format, so older logs still load.
//!
//! Vectors are written as the index holds them, int8 codes and a scale (`OP_UPSERT_CODE`,
//! `OP_UPSERT_CODE_LISTED`: 4 + d bytes instead of 4·d). A log holding `f32` entries (ops 1
//! and 3, written before) still loads: each vector is quantised as it is read — the same
//! codes a fresh insert of it gets — and `load` says so, so the owner can warn and rewrite
//! the log in the new form at its next commit.
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use mnemo_contract::{CoreError, MemoryId, Namespace, Result};

use crate::vector::code::Code;
use crate::vector::{AnnVectors, IvfSnapshot, VectorIndex};

const MAGIC: &[u8; 8] = b"MNVEC1\n\0";
const OP_UPSERT: u8 = 1;
const OP_REMOVE: u8 = 2;
const OP_UPSERT_LISTED: u8 = 3;
const OP_IVF: u8 = 4;
const OP_IVF_DROP: u8 = 5;
const OP_UPSERT_CODE: u8 = 6;
const OP_UPSERT_CODE_LISTED: u8 = 7;
/// `OP_IVF` with the calibrated probe count after the rows trained on (so a reopen serves
/// with the count the index had, and need not calibrate again).
const OP_IVF_PROBED: u8 = 8;

/// One change to the vectors, pending until the next commit.
#[derive(Clone, Debug, PartialEq)]
pub enum VecOp {
    /// Set the vector of an id (as codes); with its IVF list when its namespace has an IVF.
    Upsert(Namespace, MemoryId, Code, Option<u32>),
    /// Drop the vector of an id.
    Remove(MemoryId),
    /// Set (Some) or drop (None) the IVF of a namespace.
    Ivf(Namespace, Option<IvfSnapshot>),
}

/// The file name of a generation.
pub fn file_name(generation: u64) -> String {
    format!("vectors-{generation}.log")
}

fn io(path: &Path, what: &str, e: std::io::Error) -> CoreError {
    crate::index_error::index_error(format!("{}: {what}", path.display()), e)
}

fn put_ns(ns: &Namespace, out: &mut Vec<u8>) {
    let nb = ns.as_str().as_bytes();
    // Namespaces are at most 128 bytes (validated by Namespace::new).
    out.push(nb.len() as u8);
    out.extend_from_slice(nb);
}

fn put_floats(v: &[f32], out: &mut Vec<u8>) {
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn encode_upsert(ns: &Namespace, id: MemoryId, codes: &[i8], scale: f32, list: Option<u32>, out: &mut Vec<u8>) {
    out.push(if list.is_some() { OP_UPSERT_CODE_LISTED } else { OP_UPSERT_CODE });
    out.extend_from_slice(&id.0.to_le_bytes());
    put_ns(ns, out);
    if let Some(l) = list {
        out.extend_from_slice(&l.to_le_bytes());
    }
    out.extend_from_slice(&(codes.len() as u32).to_le_bytes());
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(codes.iter().map(|&c| c as u8));
}

fn encode_ivf(ns: &Namespace, snap: Option<&IvfSnapshot>, out: &mut Vec<u8>) {
    let Some(s) = snap else {
        out.push(OP_IVF_DROP);
        put_ns(ns, out);
        return;
    };
    out.push(OP_IVF_PROBED);
    put_ns(ns, out);
    let lists = s.centroids.len() / (s.dims.max(1) as usize);
    out.extend_from_slice(&s.dims.to_le_bytes());
    out.extend_from_slice(&(lists as u32).to_le_bytes());
    out.extend_from_slice(&s.trained_rows.to_le_bytes());
    out.extend_from_slice(&s.nprobe.to_le_bytes());
    put_floats(&s.centroids, out);
    out.extend_from_slice(&(s.assignment.len() as u64).to_le_bytes());
    for (id, l) in &s.assignment {
        out.extend_from_slice(&id.0.to_le_bytes());
        out.extend_from_slice(&l.to_le_bytes());
    }
}

fn encode(op: &VecOp, out: &mut Vec<u8>) {
    match op {
        VecOp::Upsert(ns, id, c, list) => encode_upsert(ns, *id, &c.codes, c.scale, *list, out),
        VecOp::Remove(id) => {
            out.push(OP_REMOVE);
            out.extend_from_slice(&id.0.to_le_bytes());
        }
        VecOp::Ivf(ns, snap) => encode_ivf(ns, snap.as_ref(), out),
    }
}

/// Create a new generation holding every vector of `vectors` (and each namespace's IVF
/// centroids before its vectors, each vector with its list); returns its length in bytes.
pub fn write_generation(dir: &Path, generation: u64, vectors: &AnnVectors) -> Result<u64> {
    let path = dir.join(file_name(generation));
    let f = File::create(&path).map_err(|e| io(&path, "cannot create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let mut len = MAGIC.len() as u64;
    w.write_all(MAGIC).map_err(|e| io(&path, "cannot write", e))?;
    let mut buf = Vec::new();
    for ns in vectors.namespaces() {
        buf.clear();
        if let Some(header) = vectors.ivf_header(ns) {
            encode_ivf(ns, Some(&header), &mut buf);
        }
        for (id, codes, scale, list) in vectors.vectors_of(ns) {
            encode_upsert(ns, id, codes, scale, list, &mut buf);
            if buf.len() >= 1 << 16 {
                w.write_all(&buf).map_err(|e| io(&path, "cannot write", e))?;
                len += buf.len() as u64;
                buf.clear();
            }
        }
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

/// A cursor over the log's bytes.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes)
    }
    fn id(&mut self) -> Option<MemoryId> {
        self.take(8).and_then(|b| b.try_into().ok()).map(|b| MemoryId(i64::from_le_bytes(b)))
    }
    fn ns(&mut self) -> Option<Namespace> {
        let n = self.u8()? as usize;
        std::str::from_utf8(self.take(n)?).ok().and_then(|s| Namespace::new(s).ok())
    }
    fn floats(&mut self, n: usize) -> Option<Vec<f32>> {
        let raw = self.take(n.checked_mul(4)?)?;
        Some(raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
}

/// Replay the first `len` bytes of a generation into `vectors` (the caller settles the IVF
/// policy afterwards: see `AnnVectors::settle`). Returns how many vectors were read in the
/// old `f32` form (quantised as they were read: the log should be rewritten).
pub fn load(dir: &Path, generation: u64, len: u64, vectors: &mut AnnVectors) -> std::result::Result<usize, String> {
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
    let mut r = Reader { data: &data, at: MAGIC.len() };
    let mut old_form = 0usize;
    while r.at < data.len() {
        let start = r.at;
        let truncated = || bad(start, "truncated entry");
        match r.u8().ok_or_else(truncated)? {
            op @ (OP_UPSERT | OP_UPSERT_LISTED) => {
                let id = r.id().ok_or_else(truncated)?;
                let ns = r.ns().ok_or_else(|| bad(start, "bad namespace"))?;
                let list = if op == OP_UPSERT_LISTED { Some(r.u32().ok_or_else(truncated)?) } else { None };
                let dims = r.u32().ok_or_else(truncated)? as usize;
                let v = r.floats(dims).ok_or_else(truncated)?;
                vectors.replay_upsert(&ns, id, &v, list).map_err(|e| bad(start, &e.to_string()))?;
                old_form += 1;
            }
            op @ (OP_UPSERT_CODE | OP_UPSERT_CODE_LISTED) => {
                let id = r.id().ok_or_else(truncated)?;
                let ns = r.ns().ok_or_else(|| bad(start, "bad namespace"))?;
                let list = if op == OP_UPSERT_CODE_LISTED { Some(r.u32().ok_or_else(truncated)?) } else { None };
                let dims = r.u32().ok_or_else(truncated)? as usize;
                let scale = f32::from_le_bytes(r.u32().ok_or_else(truncated)?.to_le_bytes());
                let codes = r.take(dims).ok_or_else(truncated)?.iter().map(|&b| b as i8).collect();
                vectors
                    .replay_upsert_code(&ns, id, Code { codes, scale }, list)
                    .map_err(|e| bad(start, &e.to_string()))?;
            }
            OP_REMOVE => {
                let id = r.id().ok_or_else(truncated)?;
                vectors.remove(id);
            }
            op @ (OP_IVF | OP_IVF_PROBED) => {
                let ns = r.ns().ok_or_else(|| bad(start, "bad namespace"))?;
                let dims = r.u32().ok_or_else(truncated)?;
                let lists = r.u32().ok_or_else(truncated)? as usize;
                let trained_rows = r.u64().ok_or_else(truncated)?;
                // 0: not calibrated (an older log): calibrated after loading.
                let nprobe = if op == OP_IVF_PROBED { r.u32().ok_or_else(truncated)? } else { 0 };
                let centroids = r.floats(lists.saturating_mul(dims as usize)).ok_or_else(truncated)?;
                let count = r.u64().ok_or_else(truncated)? as usize;
                if count.saturating_mul(12) > data.len() - r.at {
                    return Err(truncated());
                }
                let mut assignment = Vec::with_capacity(count);
                for _ in 0..count {
                    let id = r.id().ok_or_else(truncated)?;
                    assignment.push((id, r.u32().ok_or_else(truncated)?));
                }
                let snap = IvfSnapshot { trained_rows, dims, centroids, assignment, nprobe };
                vectors.restore_ivf(&ns, Some(snap)).map_err(|e| bad(start, &e.to_string()))?;
            }
            OP_IVF_DROP => {
                let ns = r.ns().ok_or_else(|| bad(start, "bad namespace"))?;
                vectors.restore_ivf(&ns, None).map_err(|e| bad(start, &e.to_string()))?;
            }
            other => return Err(bad(start, &format!("unknown op {other}"))),
        }
    }
    Ok(old_form)
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
    use crate::vector::AnnSettings;

    #[test]
    fn round_trip_ignores_bytes_past_the_commit_and_rejects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let ns = Namespace::new("a").unwrap();
        let mut v = AnnVectors::new(AnnSettings::default());
        v.upsert(&ns, MemoryId(1), &[1.0, 0.0]).unwrap();
        let len = write_generation(dir.path(), 3, &v).unwrap();
        let len2 = append(
            dir.path(),
            3,
            len,
            &[VecOp::Upsert(ns.clone(), MemoryId(2), Code::of(&[0.0, 1.0]), None), VecOp::Remove(MemoryId(1))],
        )
        .unwrap();
        // An append never committed: ignored by a load of len2.
        append(dir.path(), 3, len2, &[VecOp::Remove(MemoryId(2))]).unwrap();
        let mut back = AnnVectors::new(AnnSettings::default());
        assert_eq!(load(dir.path(), 3, len2, &mut back).unwrap(), 0, "no vector in the old f32 form");
        assert_eq!(back.len(), 1);
        assert!(back.contains(MemoryId(2)) && !back.contains(MemoryId(1)));
        let mut short = AnnVectors::new(AnnSettings::default());
        assert!(load(dir.path(), 3, len2 + 10_000, &mut short).unwrap_err().contains("covers"));
        std::fs::write(dir.path().join(file_name(4)), b"garbage!garbage").unwrap();
        assert!(load(dir.path(), 4, 15, &mut short).unwrap_err().contains("not a Mnemo vector log"));
        remove_other_generations(dir.path(), Some(3));
        assert!(!dir.path().join(file_name(4)).exists() && dir.path().join(file_name(3)).exists());
    }

    #[test]
    fn a_log_of_f32_vectors_still_loads_quantised_and_says_so() {
        // The earlier form: op 1 (upsert) with f32 values, then an op 2 (remove).
        let dir = tempfile::tempdir().unwrap();
        let ns = Namespace::new("a").unwrap();
        let mut bytes = MAGIC.to_vec();
        for (id, v) in [(1i64, [0.6f32, 0.8]), (2, [1.0, 0.0]), (3, [0.0, 1.0])] {
            bytes.push(OP_UPSERT);
            bytes.extend_from_slice(&id.to_le_bytes());
            put_ns(&ns, &mut bytes);
            bytes.extend_from_slice(&2u32.to_le_bytes());
            put_floats(&v, &mut bytes);
        }
        bytes.push(OP_REMOVE);
        bytes.extend_from_slice(&3i64.to_le_bytes());
        std::fs::write(dir.path().join(file_name(1)), &bytes).unwrap();
        let mut v = AnnVectors::new(AnnSettings::default());
        assert_eq!(load(dir.path(), 1, bytes.len() as u64, &mut v).unwrap(), 3, "three vectors in the old form");
        assert_eq!(v.len(), 2);
        let hits = v.search(&ns, &[0.6, 0.8], 2).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![MemoryId(1), MemoryId(2)]);
        assert!((hits[0].1 - 1.0).abs() < 0.01 && (hits[1].1 - 0.6).abs() < 0.01, "{hits:?}");
        // Rewritten in the new form, it loads the same and is smaller.
        let len = write_generation(dir.path(), 2, &v).unwrap();
        let mut back = AnnVectors::new(AnnSettings::default());
        assert_eq!(load(dir.path(), 2, len, &mut back).unwrap(), 0);
        assert_eq!(back.search(&ns, &[0.6, 0.8], 2).unwrap(), hits);
    }
}
