//! Opening the index: in RAM, or from its directory (creating it, or finding it stale), and
//! the live tantivy parts (writer, reader, analyser) of an index just created or opened.
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use mnemo_contract::{Clock, CoreError, IndexErrorKind, Result};
use tantivy::ReloadPolicy;

use super::overlay::Overlay;
use super::schema::{self, Fields, Payload, SCHEMA_VERSION, TOKENIZER};
use super::write::queue_ivf_changes;
use super::{
    read_only_dir, rebuild_aside, searcher_cache, shape, terr, vector_log, Inner, Live, TantivyIndex, TantivySettings,
};
use crate::vector::AnnVectors;

impl TantivyIndex {
    /// An index in RAM (nothing persists).
    pub fn in_memory(settings: TantivySettings, clock: Arc<dyn Clock>) -> Result<Self> {
        settings.validate()?;
        let live = Self::create_live(None, &settings)?;
        let vectors = AnnVectors::new(settings.ann());
        Ok(Self::assemble(Some(live), None, settings, clock, None, None, vectors))
    }

    /// Open the index in `dir`, creating it when missing. A missing, corrupt or other-version
    /// index is reported by `state()` as stale (never an error here); only a failure to use
    /// the directory at all (permissions, a lock held by another process) is an error. Whatever
    /// sits at `dir` that is not an index of ours (a file, a dangling link, a directory of
    /// other things) is moved aside first (`shape`), and the index is stale, saying so.
    pub fn open(dir: &Path, settings: TantivySettings, clock: Arc<dyn Clock>) -> Result<Self> {
        settings.validate()?;
        let aside = if settings.read_only { None } else { shape::set_aside(dir)? };
        if !settings.read_only && dir.is_dir() {
            // What a killed rebuild left: finished (put in place) or not (removed).
            if let Some(note) = rebuild_aside::recover(dir)
                .map_err(|e| terr(&format!("cannot tidy up an earlier rebuild in {}", dir.display()), e))?
            {
                tracing::warn!("{note}");
            }
        }
        let tdir = dir.join(rebuild_aside::CURRENT_DIR);
        let fresh = |why: String, s: &TantivySettings| -> Result<Opened> {
            std::fs::create_dir_all(&tdir).map_err(|e| terr(&format!("cannot create {}", tdir.display()), e))?;
            Ok((Some(Self::create_live(Some(&tdir), s)?), Some(why), None))
        };
        if settings.read_only && !tdir.join("meta.json").exists() {
            return Err(CoreError::index_message(
                IndexErrorKind::ReadOnly,
                format!("no index at {} to open read-only", dir.display()),
            ));
        }
        let (live, stale, loaded) = if !tdir.join("meta.json").exists() {
            fresh(aside.unwrap_or_else(|| format!("no index at {}", dir.display())), &settings)?
        } else {
            match Self::open_live(dir, &tdir, &settings) {
                Ok((live, Ok(loaded))) => {
                    if !settings.read_only {
                        // Logs of other generations (a killed rebuild's) are never read again.
                        vector_log::remove_other_generations(dir, Some(loaded.0.vectors_generation));
                    }
                    (Some(live), None, Some(loaded))
                }
                Ok((live, Err(why))) => (Some(live), Some(why), None),
                Err(OpenError::Fatal(e)) => return Err(e),
                Err(OpenError::Corrupt(why)) => (None, Some(why), None),
            }
        };
        let vectors = AnnVectors::new(settings.ann());
        Ok(Self::assemble(live, stale, settings, clock, Some(dir.to_path_buf()), loaded, vectors))
    }

    fn assemble(
        live: Option<Live>,
        stale: Option<String>,
        settings: TantivySettings,
        clock: Arc<dyn Clock>,
        dir: Option<PathBuf>,
        loaded: Option<Loaded>,
        empty: AnnVectors,
    ) -> Self {
        let now = clock.now();
        let (watermark, generation, len, stamp, vectors) = match loaded {
            Some((p, v)) => (p.watermark, p.vectors_generation, p.vectors_len, p.stamp, v),
            None => (0, 0, 0, None, empty),
        };
        let mut inner = Inner {
            live,
            stale,
            overlay: Overlay::default(),
            vectors,
            pending_vectors: Vec::new(),
            watermark,
            durable_watermark: watermark,
            durable_stamp: stamp.clone(),
            stamp,
            vectors_generation: generation,
            vectors_len: len,
            last_commit: now,
            rebuilding: false,
        };
        // What the settle after loading changed (an IVF trained or dropped) goes to the log.
        queue_ivf_changes(&mut inner.vectors, &mut inner.pending_vectors, dir.is_some());
        let fusion = settings.fusion();
        TantivyIndex {
            inner: RwLock::new(inner),
            settings,
            fusion,
            clock,
            dir,
            damaged: std::sync::Mutex::new(None),
            searcher_cache: searcher_cache::SearcherCache::default(),
            bulk: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub(super) fn create_live(tdir: Option<&Path>, s: &TantivySettings) -> Result<Live> {
        let (sch, fields) = schema::schema();
        let index = match tdir {
            None => tantivy::Index::create_in_ram(sch),
            Some(d) => tantivy::Index::create_in_dir(d, sch)
                .map_err(|e| terr(&format!("cannot create index in {}", d.display()), e))?,
        };
        Self::live_of(index, fields, s, tdir).map_err(|e| match e {
            OpenError::Fatal(e) => e,
            OpenError::Corrupt(why) => CoreError::index_message(IndexErrorKind::Damaged, why),
        })
    }

    pub(super) fn live_of(
        index: tantivy::Index,
        fields: Fields,
        s: &TantivySettings,
        tdir: Option<&Path>,
    ) -> std::result::Result<Live, OpenError> {
        let mut analyzer = schema::analyzer(s.stemming);
        index.tokenizers().register(TOKENIZER, analyzer.clone());
        let stop_terms = if s.query_stop_words { schema::stop_terms(&mut analyzer) } else { Default::default() };
        let writer = if s.read_only {
            None
        } else {
            let writer = index.writer_with_num_threads(1, s.writer_memory_mb * 1024 * 1024).map_err(|e| match e {
                tantivy::TantivyError::LockFailure(..) => {
                    OpenError::Fatal(terr("cannot open the index writer (is another process using this index?)", e))
                }
                e => OpenError::Corrupt(format!("cannot open the index writer: {e}")),
            })?;
            // Files a killed commit left behind (e.g. a `.del` file the next commit would write
            // again under the same name) are not referenced by meta.json: remove them first.
            writer
                .garbage_collect_files()
                .wait()
                .map_err(|e| OpenError::Corrupt(format!("cannot clean up files of an unfinished commit: {e}")))?;
            // So are the temporary files of an atomic write (`meta.json`, `.managed.json`) that
            // a killed process left: only the writer, whose lock this process now holds, makes
            // them.
            if let Some(tdir) = tdir {
                remove_temporary_files(tdir);
            }
            Some(writer)
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| OpenError::Corrupt(format!("cannot open a reader: {e}")))?;
        let mut max_id = i64::MIN;
        for segment in reader.searcher().segment_readers() {
            let ids = segment
                .fast_fields()
                .i64("id")
                .map_err(|e| OpenError::Corrupt(format!("cannot read the id column: {e}")))?;
            // The column's statistics cover its deleted documents too.
            max_id = max_id.max(ids.max_value());
        }
        Ok(Live { writer, reader, fields, analyzer, stop_terms, max_id })
    }

    /// Open an existing index: the live parts, and either its payload + vectors or why it is
    /// stale.
    fn open_live(dir: &Path, tdir: &Path, s: &TantivySettings) -> std::result::Result<OpenedLive, OpenError> {
        let opened = if s.read_only {
            read_only_dir::ReadOnlyDirectory::open(tdir)
                .map_err(tantivy::TantivyError::from)
                .and_then(tantivy::Index::open)
        } else {
            tantivy::Index::open_in_dir(tdir)
        };
        let index =
            opened.map_err(|e| OpenError::Corrupt(format!("cannot open the index in {}: {e}", tdir.display())))?;
        if s.verify_on_open {
            let damaged = index
                .validate_checksum()
                .map_err(|e| OpenError::Corrupt(format!("{}: cannot verify the index files: {e}", tdir.display())))?;
            if !damaged.is_empty() {
                let mut names: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
                names.sort();
                return Err(OpenError::Corrupt(format!(
                    "{}: damaged index files (checksum mismatch): {}",
                    tdir.display(),
                    names.join(", ")
                )));
            }
        }
        let fields =
            schema::fields_of(&index.schema()).map_err(|e| OpenError::Corrupt(format!("{}: {e}", tdir.display())))?;
        let metas = index
            .load_metas()
            .map_err(|e| OpenError::Corrupt(format!("{}: cannot read meta.json: {e}", tdir.display())))?;
        let live = Self::live_of(index, fields, s, Some(tdir))?;
        let payload: Payload = match metas.payload.as_deref().map(serde_json::from_str::<Payload>) {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Ok((live, Err(format!("{}: unreadable commit payload: {e}", tdir.display())))),
            None => return Ok((live, Err(format!("{}: no Mnemo commit payload", tdir.display())))),
        };
        if payload.schema != SCHEMA_VERSION {
            return Ok((
                live,
                Err(format!(
                    "{}: schema version {} (this build writes {SCHEMA_VERSION})",
                    tdir.display(),
                    payload.schema
                )),
            ));
        }
        if payload.stemming != s.stemming {
            return Ok((
                live,
                Err(format!(
                    "{}: built with stemming = {}, configured {}",
                    tdir.display(),
                    payload.stemming,
                    s.stemming
                )),
            ));
        }
        let mut vectors = AnnVectors::new(s.ann());
        if payload.vectors_len > 0 {
            // Every block's checksum is verified: a damaged or earlier-format log is stale.
            if let Err(why) = vector_log::load(dir, payload.vectors_generation, payload.vectors_len, &mut vectors) {
                return Ok((live, Err(why)));
            }
        }
        // The log restores each IVF as it was; train or drop where the settings now differ.
        vectors.settle();
        Ok((live, Ok((payload, vectors))))
    }
}

/// Remove the temporary files tantivy's atomic writes make in `tdir` (`.tmp` and a random
/// suffix, renamed over their target when complete) that a killed process left behind. Best
/// effort: a file that stays is removed at a later open.
fn remove_temporary_files(tdir: &Path) {
    let Ok(rd) = std::fs::read_dir(tdir) else { return };
    for e in rd.flatten() {
        if e.file_name().to_string_lossy().starts_with(".tmp") && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The committed payload and its vectors.
type Loaded = (Payload, AnnVectors);

/// What opening found: the live index (None when corrupt), why it is stale, and the committed
/// payload with its vectors (None when stale).
type Opened = (Option<Live>, Option<String>, Option<Loaded>);

/// An opened index and either its payload + vectors or why it is stale.
type OpenedLive = (Live, std::result::Result<Loaded, String>);

pub(super) enum OpenError {
    /// The index cannot be used as it is: rebuild.
    Corrupt(String),
    /// Nothing can be done here (e.g. locked by another process).
    Fatal(CoreError),
}
