//! The vectors of a persistent `TantivyIndex`, kept beside the tantivy directory so that a
//! reopen needs no re-embedding: an append-only log of upserts and removals, one generation
//! file at a time (`vectors-<gen>.log`). Each commit appends the operations since the last one
//! and records the file name and its valid length in the tantivy commit payload; bytes past
//! that length (a crash between the append and the commit) are ignored on load. When the log
//! holds mostly dead entries it is rewritten as a new generation, named by the next commit.
//!
//! The format (`MNVEC2`): the 8-byte magic, then blocks, each `[length: u32][crc32: u32]`
//! (little-endian) and `length` bytes of operations; the CRC-32 (IEEE) covers those bytes. A
//! commit appends one block or more (a new generation is written in blocks of about 64 KiB).
//! Every block's checksum is verified when the log is loaded: a flipped byte anywhere makes
//! `load` fail naming the file and the block, so the index is stale and rebuilt from the store
//! instead of serving a wrong vector. A log of the earlier format (`MNVEC1`, operations without
//! checksums) is not read at all: the index is rebuilt from the store, saying so.
//!
//! The IVF of a big namespace persists in the same log, so a reopen neither retrains nor
//! reassigns: a training writes the centroids and every vector's list (`OP_IVF_PROBED`), each
//! later upsert into that namespace carries its list (`OP_UPSERT_CODE_LISTED`), and dropping
//! the IVF is `OP_IVF_DROP`. Vectors are written as the index holds them, int8 codes and a
//! scale (`OP_UPSERT_CODE`, `OP_UPSERT_CODE_LISTED`: 4 + d bytes). Ops 1, 3 and 4 (`f32`
//! vectors, an IVF without its probe count) were only ever written in `MNVEC1` logs.
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use mnemo_contract::{CoreError, MemoryId, Namespace, Result};

use crate::vector::code::Code;
use crate::vector::{AnnVectors, IvfSnapshot, VectorIndex};

/// The magic of this format: checksummed blocks.
const MAGIC: &[u8; 8] = b"MNVEC2\n\0";
/// The magic of the earlier format (no checksums): never read, the index is rebuilt.
const MAGIC_V1: &[u8; 8] = b"MNVEC1\n\0";
/// A block's header: its length and its CRC-32.
const BLOCK_HEADER: usize = 8;
/// A new generation is written in blocks of about this many bytes (a block ends at an
/// operation's end, so one big operation makes a bigger block).
const BLOCK_BYTES: usize = 1 << 16;
const OP_REMOVE: u8 = 2;
const OP_IVF_DROP: u8 = 5;
const OP_UPSERT_CODE: u8 = 6;
const OP_UPSERT_CODE_LISTED: u8 = 7;
/// An IVF: its centroids, the calibrated probe count after the rows trained on (so a reopen
/// serves with the count the index had, and need not calibrate again), every vector's list.
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

/// Append `ops` (encoded operations) to `out` as one block: length, CRC-32, the bytes.
fn put_block(ops: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(ops).to_le_bytes());
    out.extend_from_slice(ops);
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
/// centroids before its vectors, each vector with its list), in checksummed blocks; returns its
/// length in bytes.
pub fn write_generation(dir: &Path, generation: u64, vectors: &AnnVectors) -> Result<u64> {
    let path = dir.join(file_name(generation));
    let f = File::create(&path).map_err(|e| io(&path, "cannot create", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let mut len = MAGIC.len() as u64;
    w.write_all(MAGIC).map_err(|e| io(&path, "cannot write", e))?;
    let mut ops = Vec::new();
    let mut block = Vec::new();
    let mut flush = |ops: &mut Vec<u8>, w: &mut BufWriter<File>| -> Result<u64> {
        if ops.is_empty() {
            return Ok(0);
        }
        block.clear();
        put_block(ops, &mut block);
        ops.clear();
        w.write_all(&block).map_err(|e| io(&path, "cannot write", e))?;
        Ok(block.len() as u64)
    };
    for ns in vectors.namespaces() {
        if let Some(header) = vectors.ivf_header(ns) {
            encode_ivf(ns, Some(&header), &mut ops);
        }
        for (id, codes, scale, list) in vectors.vectors_of(ns) {
            encode_upsert(ns, id, codes, scale, list, &mut ops);
            if ops.len() >= BLOCK_BYTES {
                len += flush(&mut ops, &mut w)?;
            }
        }
    }
    len += flush(&mut ops, &mut w)?;
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
    // Blocks of about `BLOCK_BYTES`, each ending at an operation's end.
    let mut buf = Vec::new();
    let mut block = Vec::new();
    for op in ops {
        encode(op, &mut block);
        if block.len() >= BLOCK_BYTES {
            put_block(&block, &mut buf);
            block.clear();
        }
    }
    if !block.is_empty() {
        put_block(&block, &mut buf);
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
/// policy afterwards: see `AnnVectors::settle`), every block's checksum verified first. The
/// error names the file and what is wrong with it (the index is then rebuilt from the store).
pub fn load(dir: &Path, generation: u64, len: u64, vectors: &mut AnnVectors) -> std::result::Result<(), String> {
    let path: PathBuf = dir.join(file_name(generation));
    let mut f = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut data = Vec::new();
    f.read_to_end(&mut data).map_err(|e| format!("{}: {e}", path.display()))?;
    if (data.len() as u64) < len {
        return Err(format!("{}: {} bytes, but the last commit covers {len}", path.display(), data.len()));
    }
    data.truncate(len as usize);
    match data.get(..MAGIC.len()) {
        Some(m) if m == &MAGIC[..] => {}
        Some(m) if m == &MAGIC_V1[..] => {
            return Err(format!(
                "{}: written by an earlier format of the vector log (MNVEC1, without checksums)",
                path.display()
            ))
        }
        _ => return Err(format!("{}: not a Mnemo vector log", path.display())),
    }
    let mut at = MAGIC.len();
    while at < data.len() {
        let header = data
            .get(at..at + BLOCK_HEADER)
            .ok_or_else(|| format!("{}: corrupt at byte {at}: truncated block header", path.display()))?;
        let n = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        let start = at + BLOCK_HEADER;
        let ops = start.checked_add(n).and_then(|end| data.get(start..end)).ok_or_else(|| {
            format!("{}: corrupt at byte {at}: a block runs past the committed length", path.display())
        })?;
        if crc32fast::hash(ops) != crc {
            return Err(format!(
                "{}: checksum mismatch in the block at byte {at} ({n} bytes): the file is damaged",
                path.display()
            ));
        }
        replay_block(&path, ops, start, vectors)?;
        at = start + n;
    }
    Ok(())
}

/// Replay the operations of one verified block that starts at byte `offset` of the file.
fn replay_block(path: &Path, data: &[u8], offset: usize, vectors: &mut AnnVectors) -> std::result::Result<(), String> {
    let bad = |at: usize, what: &str| format!("{}: corrupt at byte {}: {what}", path.display(), offset + at);
    let mut r = Reader { data, at: 0 };
    while r.at < data.len() {
        let start = r.at;
        let truncated = || bad(start, "truncated entry");
        match r.u8().ok_or_else(truncated)? {
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
            OP_IVF_PROBED => {
                let ns = r.ns().ok_or_else(|| bad(start, "bad namespace"))?;
                let dims = r.u32().ok_or_else(truncated)?;
                let lists = r.u32().ok_or_else(truncated)? as usize;
                let trained_rows = r.u64().ok_or_else(truncated)?;
                let nprobe = r.u32().ok_or_else(truncated)?;
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
    Ok(())
}

/// The newest generation of a vector log in `dir` (0: none).
pub fn newest_generation(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name();
            name.to_str()?.strip_prefix("vectors-")?.strip_suffix(".log")?.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0)
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
        load(dir.path(), 3, len2, &mut back).unwrap();
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
    fn a_log_of_the_earlier_format_is_refused_not_misread() {
        // MNVEC1: op 1 (upsert) with f32 values, no checksums.
        let dir = tempfile::tempdir().unwrap();
        let ns = Namespace::new("a").unwrap();
        let mut bytes = MAGIC_V1.to_vec();
        bytes.push(1);
        bytes.extend_from_slice(&1i64.to_le_bytes());
        put_ns(&ns, &mut bytes);
        bytes.extend_from_slice(&2u32.to_le_bytes());
        put_floats(&[0.6, 0.8], &mut bytes);
        std::fs::write(dir.path().join(file_name(1)), &bytes).unwrap();
        let mut v = AnnVectors::new(AnnSettings::default());
        let e = load(dir.path(), 1, bytes.len() as u64, &mut v).unwrap_err();
        assert!(e.contains("vectors-1.log") && e.contains("earlier format"), "{e}");
        assert_eq!(v.len(), 0);
    }

    #[test]
    fn a_flipped_byte_anywhere_fails_the_load_naming_the_file_and_the_block() {
        let dir = tempfile::tempdir().unwrap();
        let ns = Namespace::new("a").unwrap();
        let mut v = AnnVectors::new(AnnSettings::default());
        for i in 0..5_000i64 {
            let x = i as f32;
            let e: Vec<f32> = (0..16).map(|k| (x * (k + 1) as f32).sin()).collect();
            v.upsert(&ns, MemoryId(i + 1), &e).unwrap();
        }
        let len = write_generation(dir.path(), 1, &v).unwrap();
        let len = append(dir.path(), 1, len, &[VecOp::Upsert(ns.clone(), MemoryId(9_999), Code::of(&[1.0; 16]), None)])
            .unwrap();
        let path = dir.path().join(file_name(1));
        let clean = std::fs::read(&path).unwrap();
        assert_eq!(clean.len() as u64, len);
        assert!(len > 2 * BLOCK_BYTES as u64, "several blocks: {len}");
        let mut back = AnnVectors::new(AnnSettings::default());
        load(dir.path(), 1, len, &mut back).unwrap();
        assert_eq!(back.len(), 5_001);
        // Every byte after the magic, at a stride (all of them in a small file would be slow).
        for at in (MAGIC.len()..clean.len()).step_by(331).chain([clean.len() - 1]) {
            let mut bytes = clean.clone();
            bytes[at] ^= 0x40;
            std::fs::write(&path, &bytes).unwrap();
            let mut back = AnnVectors::new(AnnSettings::default());
            let e = load(dir.path(), 1, len, &mut back).unwrap_err();
            assert!(e.contains("vectors-1.log"), "byte {at}: {e}");
        }
        // The three flips of the report (issue 42): a checksum mismatch.
        let mut bytes = clean.clone();
        let size = bytes.len();
        for at in [size / 2 + 100, size / 3 + 57, size / 4 + 11] {
            bytes[at] ^= 0x40;
        }
        std::fs::write(&path, &bytes).unwrap();
        let e = load(dir.path(), 1, len, &mut AnnVectors::new(AnnSettings::default())).unwrap_err();
        assert!(e.contains("checksum mismatch") && e.contains("damaged"), "{e}");
    }
}
