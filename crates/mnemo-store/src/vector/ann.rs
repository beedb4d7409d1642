//! [`AnnVectors`]: vectors partitioned by namespace, each namespace a [`Space`]: one block
//! scanned exactly, or, once it holds `min_vectors` vectors, an IVF whose lists are blocks of
//! their own. Below the threshold the exact scan answers (exact is best where it is cheap).
//!
//! The vectors are held as int8 codes (see `code`): a quarter of their `f32` bytes.
//!
//! Life of a namespace's IVF (deterministic: seeded k-means on the rows copied when the
//! training starts, every row filed under its nearest centroid, no clock):
//! - trained when an insert brings the namespace to `min_vectors` rows, and trained again
//!   when it has grown [`RETRAIN_GROWTH`]× since the last training — in the background
//!   (`background`): writes go on into the current structure and are journaled for the
//!   training, whose result is put in place whole at the next write after it finished;
//! - an insert between trainings is filed under its nearest centroid; a changed vector is
//!   refiled; a removal leaves its list at once (a removed id is never returned);
//! - dropped (exact again) when removals bring the namespace under half of `min_vectors`.
//!
//! Every wholesale change of a namespace's IVF (trained, dropped) is recorded for the owner
//! ([`AnnVectors::take_ivf_changes`]), which persists it ([`AnnVectors::ivf_snapshot`]) so a
//! reopen restores the lists without retraining or reassigning
//! ([`AnnVectors::restore_ivf`], [`AnnVectors::replay_upsert`]).
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use mnemo_contract::{CoreError, MemoryId, Namespace, Result};

use super::background::{Change, Plan, Training};
use super::calibrate;
use super::code::Code;
use super::idmap::IdMap;
use super::kmeans::Quantizer;
use super::recalibrate::{self, Recalibration};
use super::space::{Coarse, Space};
use super::state::DenseState;
use super::{AnnKind, VectorIndex};

/// Retrain a namespace's IVF when it holds this many times the rows it was trained on.
pub const RETRAIN_GROWTH: usize = 4;
/// The most lists the automatic choice gives: each insert compares its vector with every
/// centroid, so lists cost ingest time (~24 µs per insert at 1,024 × 256 here).
pub const AUTO_MAX_LISTS: usize = 1024;
/// The most lists an IVF may have.
pub const MAX_LISTS: usize = 65_536;
/// Seed of the k-means (mixed with the row count, so each training is reproducible).
const SEED: u64 = 0x6d6e_656d_6f49_5646;
/// Vectors filed together by `upsert_many` (a finished training is put in place between them).
const FILE_CHUNK: usize = 2_048;

/// How the dense side is searched (from the `[index]` settings `ann`, `ann_min_vectors`,
/// `ivf_lists`, `ivf_nprobe`).
#[derive(Clone, Debug, PartialEq)]
pub struct AnnSettings {
    /// IVF above the threshold, or always exact.
    pub kind: AnnKind,
    /// Vectors a namespace must hold before it gets an IVF.
    pub min_vectors: usize,
    /// Lists of an IVF; 0 = automatic (4·√rows at training, within 16..=1024).
    pub lists: usize,
    /// Lists scanned per search, at least (see `recall_target`). 8 by default: the
    /// calibration raises it as far as a namespace's vectors need (8–22 of 1,024 lists on
    /// clustered vectors at 100k, every list on structureless ones), so a higher floor only
    /// makes clustered namespaces scan lists they do not need. With the calibration off
    /// (`recall_target` 0) it is the count itself, and 8 is too few for most data: set it.
    pub nprobe: usize,
    /// Recall@10 against the exact scan that each namespace's IVF is calibrated to when it is
    /// trained or restored: the probe count rises from `nprobe` until its own vectors, taken
    /// as queries, reach it (every list when nothing short of that does). 0 = off (`nprobe`
    /// lists, whatever recall that gives).
    pub recall_target: f64,
}

impl Default for AnnSettings {
    fn default() -> Self {
        AnnSettings { kind: AnnKind::Ivf, min_vectors: 20_000, lists: 0, nprobe: 8, recall_target: 0.95 }
    }
}

impl AnnSettings {
    /// Check ranges; the error names the `[index]` key.
    pub fn validate(&self) -> Result<()> {
        if self.min_vectors < 2 {
            return Err(CoreError::Config("index.ann_min_vectors must be at least 2".into()));
        }
        if self.lists > MAX_LISTS {
            return Err(CoreError::Config(format!("index.ivf_lists must be at most {MAX_LISTS} (0 = automatic)")));
        }
        if self.nprobe == 0 {
            return Err(CoreError::Config("index.ivf_nprobe must be at least 1".into()));
        }
        if !(0.0..=1.0).contains(&self.recall_target) {
            return Err(CoreError::Config("index.ivf_recall_target must be within 0..=1 (0 = off)".into()));
        }
        Ok(())
    }

    /// Lists for an IVF trained on `rows` rows.
    pub fn lists_for(&self, rows: usize) -> usize {
        let auto = ((4.0 * (rows as f64).sqrt()).round() as usize).clamp(16, AUTO_MAX_LISTS);
        let n = if self.lists > 0 { self.lists } else { auto };
        n.clamp(1, rows.max(1)).min(MAX_LISTS)
    }
}

/// A namespace's IVF as persisted: its centroids, and the list of each vector it held when
/// the snapshot was taken (vectors added later carry their list in their own log entry).
#[derive(Clone, Debug, PartialEq)]
pub struct IvfSnapshot {
    /// Rows when the centroids were trained.
    pub trained_rows: u64,
    /// Dimensions of the centroids.
    pub dims: u32,
    /// `lists × dims` floats.
    pub centroids: Vec<f32>,
    /// (id, list) of the vectors filed at snapshot time.
    pub assignment: Vec<(MemoryId, u32)>,
    /// The calibrated probe count (0: not calibrated).
    pub nprobe: u32,
}

/// Vectors with exact search for small namespaces and IVF for big ones (see the module docs).
pub struct AnnVectors {
    /// Dimensions, fixed by the first vector (0: none yet).
    dims: usize,
    spaces: HashMap<Namespace, Space>,
    /// The namespace of each id's vector.
    owner: IdMap<Namespace>,
    settings: AnnSettings,
    /// Namespaces whose IVF was trained or dropped since the last take.
    changed: BTreeSet<Namespace>,
    /// IVF trainings in flight, by namespace (see `background`).
    trainings: HashMap<Namespace, Training>,
    /// Probe-count calibrations in flight, by namespace (see `recalibrate`).
    recalibrations: HashMap<Namespace, Recalibration>,
    /// Held by tests to keep trainings from starting.
    gate: Option<Arc<Mutex<()>>>,
    /// Trainings started so far (for reports).
    started: usize,
}

impl AnnVectors {
    /// An empty store (settings validated by the caller).
    pub fn new(settings: AnnSettings) -> Self {
        AnnVectors {
            dims: 0,
            spaces: HashMap::new(),
            owner: IdMap::default(),
            settings,
            changed: BTreeSet::new(),
            trainings: HashMap::new(),
            recalibrations: HashMap::new(),
            gate: None,
            started: 0,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &AnnSettings {
        &self.settings
    }

    /// Dimensions of the stored vectors (0 when empty and never set).
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The namespace of `id`'s vector, if it has one.
    pub fn namespace_of(&self, id: MemoryId) -> Option<&Namespace> {
        self.owner.get(&id)
    }

    /// The namespaces holding vectors, sorted.
    pub fn namespaces(&self) -> Vec<&Namespace> {
        let mut v: Vec<&Namespace> = self.spaces.keys().collect();
        v.sort();
        v
    }

    /// Vectors held by `ns`.
    pub fn count(&self, ns: &Namespace) -> usize {
        self.spaces.get(ns).map_or(0, |s| s.rows)
    }

    /// Every (id, codes, scale, IVF list) of `ns`, list by list (the list is None when `ns` is
    /// searched exactly). The vector is `scale × codes` (see `code`).
    pub fn vectors_of<'a>(
        &'a self,
        ns: &Namespace,
    ) -> impl Iterator<Item = (MemoryId, &'a [i8], f32, Option<u32>)> + 'a {
        let d = self.dims.max(1);
        let space = self.spaces.get(ns);
        let ivf = space.is_some_and(|s| s.coarse.is_some());
        space.into_iter().flat_map(move |s| {
            s.blocks
                .iter()
                .enumerate()
                .flat_map(move |(l, b)| b.rows(d).map(move |(id, c, sc)| (id, c, sc, ivf.then_some(l as u32))))
        })
    }

    /// Lists of `ns`'s IVF (None: searched exactly).
    pub fn ivf_lists(&self, ns: &Namespace) -> Option<usize> {
        self.spaces.get(ns).filter(|s| s.coarse.is_some()).map(|s| s.blocks.len())
    }

    /// Rows in each list of `ns`'s IVF (None: searched exactly).
    pub fn ivf_list_sizes(&self, ns: &Namespace) -> Option<Vec<usize>> {
        self.spaces.get(ns).filter(|s| s.coarse.is_some()).map(|s| s.blocks.iter().map(|b| b.len()).collect())
    }

    /// How `ns`'s dense search stands (None: it holds no vectors). For reports.
    pub fn state_of(&self, ns: &Namespace) -> Option<DenseState> {
        let s = self.spaces.get(ns)?;
        let mut sizes: Vec<usize> = s.blocks.iter().map(|b| b.len()).collect();
        sizes.sort_unstable();
        let (lists, nprobe, trained_rows, calibrated_rows) = match &s.coarse {
            Some(c) => (
                s.blocks.len(),
                c.nprobe.max(self.settings.nprobe).min(s.blocks.len()),
                c.trained_rows,
                c.calibrated_rows,
            ),
            None => (0, 1, 0, 0),
        };
        Some(DenseState {
            rows: s.rows,
            lists,
            nprobe,
            calibrated: s.coarse.as_ref().is_some_and(|c| c.nprobe > 0),
            trained_rows,
            calibrated_rows,
            median_list: sizes.get(sizes.len() / 2).copied().unwrap_or(0),
            largest_list: sizes.last().copied().unwrap_or(0),
            training: self.trainings.contains_key(ns) || self.recalibrations.contains_key(ns),
            trainings_started: self.started,
        })
    }

    /// The IVF list of `id`'s vector (None when its namespace is searched exactly).
    pub fn list_of(&self, id: MemoryId) -> Option<u32> {
        let s = self.spaces.get(self.owner.get(&id)?)?;
        s.coarse.as_ref()?;
        s.list_of(id)
    }

    /// Namespaces whose IVF changed wholesale since the last call (to persist), sorted.
    pub fn take_ivf_changes(&mut self) -> Vec<Namespace> {
        std::mem::take(&mut self.changed).into_iter().collect()
    }

    /// `ns`'s IVF with the list of every vector it holds now (None: searched exactly).
    pub fn ivf_snapshot(&self, ns: &Namespace) -> Option<IvfSnapshot> {
        let mut s = self.ivf_header(ns)?;
        s.assignment = self.vectors_of(ns).filter_map(|(id, _, _, l)| Some((id, l?))).collect();
        Some(s)
    }

    /// `ns`'s IVF without the assignment (for a log that writes each vector's list with it).
    pub fn ivf_header(&self, ns: &Namespace) -> Option<IvfSnapshot> {
        let c = self.spaces.get(ns)?.coarse.as_ref()?;
        Some(IvfSnapshot {
            trained_rows: c.trained_rows as u64,
            dims: self.dims as u32,
            centroids: c.quantizer.centroids().to_vec(),
            assignment: vec![],
            nprobe: c.nprobe.min(u32::MAX as usize) as u32,
        })
    }

    /// Replay: set (Some) or drop (None) `ns`'s IVF as persisted. Vectors of `ns` already held
    /// are filed as the snapshot says, or under their nearest centroid when it does not name
    /// them. Ignored when the settings say `exact` (the settle after loading records that).
    pub fn restore_ivf(&mut self, ns: &Namespace, snap: Option<IvfSnapshot>) -> Result<()> {
        self.trainings.remove(ns);
        self.recalibrations.remove(ns);
        let Some(s) = snap else {
            self.regroup(ns, None);
            return Ok(());
        };
        if self.settings.kind == AnnKind::Exact {
            return Ok(());
        }
        let d = s.dims as usize;
        if d == 0 || s.centroids.is_empty() || s.centroids.len() % d != 0 || s.centroids.len() / d > MAX_LISTS {
            return Err(CoreError::InvalidInput(format!(
                "IVF of namespace {ns}: {} centroid floats do not make lists of {d} dimensions",
                s.centroids.len()
            )));
        }
        self.check_dims(&format!("the IVF of namespace {ns}"), d)?;
        self.dims = d;
        let lists = s.centroids.len() / d;
        let nprobe = (s.nprobe as usize).min(lists);
        let trained_rows = s.trained_rows as usize;
        // The count was calibrated at the training (the log keeps no later calibration).
        let calibrated_rows = if nprobe > 0 { trained_rows } else { 0 };
        let coarse = Coarse { quantizer: Quantizer::new(s.centroids, d), trained_rows, nprobe, calibrated_rows };
        let space = self.spaces.entry(ns.clone()).or_insert_with(Space::exact);
        // Rows already held: file them as named (a full snapshot names them all).
        let named: HashMap<MemoryId, u32> = s.assignment.into_iter().filter(|(_, l)| (*l as usize) < lists).collect();
        let old = space.take_rows();
        let mut new = Space::with_lists(coarse, d);
        for b in old {
            for (id, codes, scale) in b.rows(d) {
                let l = match named.get(&id) {
                    Some(l) => *l,
                    None => new.nearest_list_of_code(codes, scale),
                };
                new.insert(l, id, codes, scale);
            }
        }
        *space = new;
        Ok(())
    }

    /// Replay: add or replace a vector, filed under `list` when its namespace has an IVF and
    /// the list exists (else under its nearest centroid). Never trains: the log says when.
    pub fn replay_upsert(&mut self, ns: &Namespace, id: MemoryId, v: &[f32], list: Option<u32>) -> Result<()> {
        self.check_vector(id, v)?;
        let code = Code::of(v);
        self.put(ns, id, Some(v), &code, list);
        Ok(())
    }

    /// Replay a vector persisted as codes (see `replay_upsert`).
    pub fn replay_upsert_code(&mut self, ns: &Namespace, id: MemoryId, code: Code, list: Option<u32>) -> Result<()> {
        if code.codes.is_empty() || !code.scale.is_finite() {
            return Err(CoreError::InvalidInput(format!("memory {id}: empty codes or a non-finite scale")));
        }
        self.check_dims(&format!("memory {id}'s codes"), code.codes.len())?;
        self.put(ns, id, None, &code, list);
        Ok(())
    }

    /// Apply the policy to every namespace (after loading a log, or after the settings
    /// changed): train where an IVF is due (in the background), drop where it is not wanted.
    pub fn settle(&mut self) {
        let all: Vec<Namespace> = self.spaces.keys().cloned().collect();
        for ns in &all {
            self.maintain(ns);
            // A restored IVF is calibrated once its vectors are back.
            self.calibrate(ns);
        }
    }

    /// Train `ns`'s IVF anew now and wait for it (when `ann = "ivf"` and it holds at least 2
    /// vectors); true if it did. For benchmarks and tests: the policy trains on its own.
    pub fn retrain(&mut self, ns: &Namespace) -> bool {
        if !self.start_retrain(ns) {
            return false;
        }
        self.finish_training();
        true
    }

    /// Start training `ns`'s IVF anew in the background (see `retrain`); writes go on
    /// meanwhile. False when `ann = "exact"` or it holds fewer than 2 vectors.
    pub fn start_retrain(&mut self, ns: &Namespace) -> bool {
        if self.settings.kind == AnnKind::Exact || self.count(ns) < 2 {
            return false;
        }
        self.trainings.remove(ns);
        self.start_training(ns);
        true
    }

    /// Trainings started since this store was made (for reports).
    pub fn trainings_started(&self) -> usize {
        self.started
    }

    /// Whether a training of `ns` is in flight.
    pub fn training(&self, ns: &Namespace) -> bool {
        self.trainings.contains_key(ns)
    }

    /// Wait for every training in flight and put its result in place, including a training
    /// that putting one in place starts (an IVF outgrown while it trained: see `install`). Ends:
    /// nothing writes meanwhile, and the follow-up trains on every row.
    pub fn finish_training(&mut self) {
        while let Some(ns) = self.trainings.keys().next().cloned() {
            if let Some(space) = self.trainings.remove(&ns).and_then(Training::wait) {
                self.install(&ns, space);
            }
        }
        // And the calibrations (some started by the installs above).
        let all: Vec<Namespace> = self.recalibrations.keys().cloned().collect();
        for ns in all {
            if let Some(mut r) = self.recalibrations.remove(&ns) {
                // Nothing writes while this waits: the lists left are handed over at once.
                match self.spaces.get(&ns) {
                    Some(space) => r.feed(space, usize::MAX),
                    None => continue,
                }
                let (trained_rows, rows) = (r.trained_rows, r.rows);
                if let Some(p) = r.wait() {
                    self.set_calibration(&ns, trained_rows, rows, p);
                }
            }
        }
    }

    /// Set `ns`'s probe count to `p`, measured at `rows` on the IVF trained at `trained_rows`
    /// (ignored when that IVF is no longer in place).
    fn set_calibration(&mut self, ns: &Namespace, trained_rows: usize, rows: usize, p: usize) {
        let Some(space) = self.spaces.get_mut(ns) else { return };
        if let Some(c) = space.coarse.as_mut().filter(|c| c.trained_rows == trained_rows) {
            c.nprobe = p;
            c.calibrated_rows = rows;
        }
    }

    /// Put in place every finished training (cheap: a finished space is moved in whole).
    /// Writes do this on their own; owners call it where they settle between writes.
    pub fn adopt_finished(&mut self) {
        self.adopt_calibrations();
        if self.trainings.is_empty() {
            return;
        }
        let mut done = Vec::new();
        for (ns, t) in &self.trainings {
            if let Some(space) = t.take_ready() {
                done.push((ns.clone(), Some(space)));
            } else if t.failed() {
                done.push((ns.clone(), None));
            }
        }
        for (ns, space) in done {
            self.trainings.remove(&ns);
            if let Some(space) = space {
                self.install(&ns, space);
            }
        }
    }

    /// Whether a training is done and waits to be put in place (`adopt_finished`): cheap, so a
    /// search can ask it each time and put a finished training in place at once rather than
    /// keep scanning the old structure until the next write.
    pub fn has_finished_training(&self) -> bool {
        self.trainings.values().any(Training::is_done)
            || self.recalibrations.values().any(|r| r.ready().is_some() || r.failed() || r.hungry())
    }

    /// Put in place every probe count calibrated again (see `recalibrate`), on the IVF it was
    /// measured on only; hand the calibrations that wait for more lists their next step.
    fn adopt_calibrations(&mut self) {
        if self.recalibrations.is_empty() {
            return;
        }
        // One whose IVF is gone (dropped, or the namespace emptied) measures nothing in place.
        let spaces = &self.spaces;
        self.recalibrations.retain(|ns, r| {
            let same_ivf =
                spaces.get(ns).filter(|s| s.coarse.as_ref().is_some_and(|c| c.trained_rows == r.trained_rows));
            match same_ivf {
                Some(space) => {
                    r.feed(space, recalibrate::STEP_ROWS);
                    true
                }
                None => false,
            }
        });
        let done: Vec<(Namespace, Option<usize>)> = self
            .recalibrations
            .iter()
            .filter_map(|(ns, r)| match r.ready() {
                Some(p) => Some((ns.clone(), Some(p))),
                None => r.failed().then(|| (ns.clone(), None)),
            })
            .collect();
        for (ns, p) in done {
            let Some(r) = self.recalibrations.remove(&ns) else { continue };
            if let Some(p) = p {
                self.set_calibration(&ns, r.trained_rows, r.rows, p);
            }
        }
    }

    /// Start calibrating `ns`'s probe count again if its IVF has grown enough since it was
    /// last calibrated and nothing is in flight for it (see `recalibrate`).
    fn maybe_recalibrate(&mut self, ns: &Namespace) {
        let target = self.settings.recall_target;
        if target <= 0.0 || self.trainings.contains_key(ns) || self.recalibrations.contains_key(ns) {
            return;
        }
        let Some(space) = self.spaces.get(ns) else { return };
        let Some(c) = space.coarse.as_ref() else { return };
        if !recalibrate::due(c.calibrated_rows, space.rows) {
            return;
        }
        if let Some(mut r) = Recalibration::start(space, self.dims, self.settings.nprobe, target) {
            r.feed(space, recalibrate::STEP_ROWS);
            self.recalibrations.insert(ns.clone(), r);
        }
    }

    /// A lock that, while held, keeps trainings from starting their work (they wait for it):
    /// for tests that write while a training is in flight.
    pub fn training_gate(&mut self) -> Arc<Mutex<()>> {
        self.gate.get_or_insert_with(|| Arc::new(Mutex::new(()))).clone()
    }

    fn install(&mut self, ns: &Namespace, space: Space) {
        if space.rows == 0 {
            return;
        }
        self.recalibrations.remove(ns);
        self.spaces.insert(ns.clone(), space);
        self.changed.insert(ns.clone());
        // Written to meanwhile: it may have outgrown the training itself (a bulk load that
        // went on while it ran; retrained now, not at some later write, which may never come)
        // or the calibration made at its training.
        self.maintain(ns);
    }

    /// The exact `k` nearest of `ns` (what an IVF search approximates), best first.
    pub fn search_exact(&self, ns: &Namespace, q: &[f32], k: usize) -> Result<Vec<(MemoryId, f32)>> {
        self.search_with(ns, q, k, None)
    }

    fn search_with(&self, ns: &Namespace, q: &[f32], k: usize, nprobe: Option<usize>) -> Result<Vec<(MemoryId, f32)>> {
        let Some(space) = self.spaces.get(ns) else { return Ok(vec![]) };
        if k == 0 {
            return Ok(vec![]);
        }
        self.check_dims("the query embedding", q.len())?;
        if q.iter().any(|x| !x.is_finite()) {
            return Err(CoreError::InvalidInput("the query embedding has a non-finite value".into()));
        }
        Ok(space.search(&Code::of(q), k, nprobe))
    }

    fn check_dims(&self, what: &str, n: usize) -> Result<()> {
        if self.dims != 0 && n != self.dims {
            return Err(CoreError::InvalidInput(format!(
                "{what} has {n} dimensions but the index holds {}-dimensional vectors (after changing the embedder, rebuild the index: `mnemo reindex`)",
                self.dims
            )));
        }
        Ok(())
    }

    fn check_vector(&self, id: MemoryId, v: &[f32]) -> Result<()> {
        if v.is_empty() {
            return Err(CoreError::InvalidInput(format!("memory {id}: embedding is empty")));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(CoreError::InvalidInput(format!("memory {id}: embedding has a non-finite value")));
        }
        self.check_dims(&format!("memory {id}'s embedding"), v.len())
    }

    /// Regroup `ns` under new centroids (None: one exact block), recording the change.
    fn regroup(&mut self, ns: &Namespace, coarse: Option<Coarse>) {
        let d = self.dims;
        let Some(space) = self.spaces.get_mut(ns) else { return };
        if coarse.is_none() && space.coarse.is_none() {
            return;
        }
        let old = space.take_rows();
        *space = Space::file(d, coarse, old);
        self.changed.insert(ns.clone());
    }

    /// Start a background training of `ns` on a copy of its rows.
    fn start_training(&mut self, ns: &Namespace) {
        let d = self.dims;
        let Some(space) = self.spaces.get(ns) else { return };
        let rows = space.rows;
        let plan = Plan {
            dims: d,
            lists: self.settings.lists_for(rows),
            seed: SEED ^ rows as u64,
            nprobe_floor: self.settings.nprobe,
            recall_target: self.settings.recall_target,
            gate: self.gate.clone(),
        };
        self.recalibrations.remove(ns);
        self.trainings.insert(ns.clone(), Training::start(space.copy_rows(), plan));
        self.started += 1;
    }

    /// Calibrate `ns`'s probe count if it has an IVF that is not calibrated yet.
    fn calibrate(&mut self, ns: &Namespace) {
        let (d, floor, target) = (self.dims, self.settings.nprobe, self.settings.recall_target);
        if target <= 0.0 {
            return;
        }
        if let Some(space) = self.spaces.get_mut(ns) {
            if space.coarse.as_ref().is_some_and(|c| c.nprobe == 0) {
                let p = calibrate::probes_for_recall(space, d, floor, target);
                let rows = space.rows;
                if let Some(c) = space.coarse.as_mut() {
                    c.nprobe = p;
                    c.calibrated_rows = rows;
                }
            }
        }
    }

    /// The lists a search of `ns` scans: the calibrated count, at least the configured one
    /// (None when `ns` is searched exactly).
    pub fn ivf_nprobe(&self, ns: &Namespace) -> Option<usize> {
        let c = self.spaces.get(ns)?.coarse.as_ref()?;
        Some(c.nprobe.max(self.settings.nprobe))
    }

    /// Train (in the background), retrain or drop `ns`'s IVF as the policy says.
    fn maintain(&mut self, ns: &Namespace) {
        let Some(space) = self.spaces.get(ns) else { return };
        let rows = space.rows;
        if self.settings.kind == AnnKind::Exact || rows < self.settings.min_vectors / 2 || rows < 2 {
            self.trainings.remove(ns);
            self.regroup(ns, None);
            return;
        }
        if self.trainings.contains_key(ns) {
            return;
        }
        let due = match &space.coarse {
            None => rows >= self.settings.min_vectors,
            Some(c) => rows >= c.trained_rows.saturating_mul(RETRAIN_GROWTH),
        };
        if due {
            self.start_training(ns);
        } else {
            self.maybe_recalibrate(ns);
        }
    }

    /// Add or replace without training; `list` as in `replay_upsert`; `v` is the vector the
    /// codes were made from, when there is one (filing by it is a little more exact).
    fn put(&mut self, ns: &Namespace, id: MemoryId, v: Option<&[f32]>, code: &Code, list: Option<u32>) {
        if self.owner.get(&id).is_some_and(|o| o != ns) {
            self.remove_quietly(id);
        }
        self.dims = code.codes.len();
        let space = self.spaces.entry(ns.clone()).or_insert_with(Space::exact);
        let l = match list.filter(|l| space.coarse.is_some() && (*l as usize) < space.blocks.len()) {
            Some(l) => l,
            None => match v {
                Some(v) => space.nearest_list(v),
                None => space.nearest_list_of_code(&code.codes, code.scale),
            },
        };
        space.put(l, id, &code.codes, code.scale);
        self.owner.insert(id, ns.clone());
        if let Some(t) = self.trainings.get(ns) {
            t.record(Change::Put(id, code.clone()));
        }
    }

    /// Add or replace many vectors, with the result of `upsert` one by one: the batch is
    /// checked, then each chunk of [`FILE_CHUNK`] is filed under its namespaces' nearest
    /// centroids in one pass over every core (`Quantizer::file`) and put in place in
    /// order. A training that finished is put in place between chunks (not between vectors:
    /// the lists computed for a chunk hold for the whole chunk). Returns each vector's codes.
    pub fn upsert_many(&mut self, batch: &[(&Namespace, MemoryId, &[f32])]) -> Result<Vec<Code>> {
        for (_, id, v) in batch {
            self.check_vector(*id, v)?;
            if let Some((_, first, w)) = batch.first() {
                if w.len() != v.len() {
                    return Err(CoreError::InvalidInput(format!(
                        "memory {id}'s embedding has {} dimensions, memory {first}'s {}",
                        v.len(),
                        w.len()
                    )));
                }
            }
        }
        let mut codes = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(FILE_CHUNK) {
            self.adopt_finished();
            let lists = self.nearest_lists(chunk);
            for ((ns, id, v), list) in chunk.iter().zip(lists) {
                let old = self.owner.get(id).cloned();
                let code = Code::of(v);
                self.put(ns, *id, Some(v), &code, list);
                if let Some(old) = old.filter(|o| o != *ns) {
                    self.maintain(&old);
                }
                self.maintain(ns);
                codes.push(code);
            }
        }
        Ok(codes)
    }

    /// The nearest list of each vector whose namespace has an IVF now (None for the others).
    fn nearest_lists(&self, chunk: &[(&Namespace, MemoryId, &[f32])]) -> Vec<Option<u32>> {
        let mut out = vec![None; chunk.len()];
        let mut by_ns: HashMap<&Namespace, Vec<usize>> = HashMap::new();
        for (i, (ns, _, _)) in chunk.iter().enumerate() {
            if self.spaces.get(*ns).is_some_and(|s| s.coarse.is_some()) {
                by_ns.entry(*ns).or_default().push(i);
            }
        }
        for (ns, rows) in by_ns {
            let Some(c) = self.spaces.get(ns).and_then(|s| s.coarse.as_ref()) else { continue };
            let mut data = Vec::with_capacity(rows.len() * self.dims);
            for &i in &rows {
                data.extend_from_slice(chunk[i].2);
            }
            for (&i, l) in rows.iter().zip(c.quantizer.file(&data)) {
                out[i] = Some(l);
            }
        }
        out
    }

    /// Remove `id`'s row without applying the policy; the namespace it was in, if any.
    fn remove_quietly(&mut self, id: MemoryId) -> Option<Namespace> {
        let ns = self.owner.remove(&id)?;
        let d = self.dims;
        let space = self.spaces.get_mut(&ns)?;
        space.remove(id, d);
        if let Some(t) = self.trainings.get(&ns) {
            t.record(Change::Remove(id));
        }
        if space.rows == 0 {
            if space.coarse.is_some() {
                self.changed.insert(ns.clone());
            }
            self.spaces.remove(&ns);
            self.trainings.remove(&ns);
        }
        Some(ns)
    }

    #[cfg(test)]
    fn check(&self) {
        let mut n = 0;
        for (ns, s) in &self.spaces {
            s.check();
            for b in &s.blocks {
                for id in &b.ids {
                    assert_eq!(&self.owner[id], ns, "{id}");
                    n += 1;
                }
            }
        }
        assert_eq!(n, self.owner.len());
    }
}

impl VectorIndex for AnnVectors {
    fn upsert(&mut self, ns: &Namespace, id: MemoryId, v: &[f32]) -> Result<()> {
        self.check_vector(id, v)?;
        self.adopt_finished();
        let old = self.owner.get(&id).cloned();
        let code = Code::of(v);
        self.put(ns, id, Some(v), &code, None);
        if let Some(old) = old.filter(|o| o != ns) {
            self.maintain(&old);
        }
        self.maintain(ns);
        Ok(())
    }

    fn remove(&mut self, id: MemoryId) -> bool {
        self.adopt_finished();
        let Some(ns) = self.remove_quietly(id) else { return false };
        if self.spaces.get(&ns).is_some_and(|s| s.coarse.is_some()) {
            self.maintain(&ns);
        }
        true
    }

    fn search(&self, ns: &Namespace, q: &[f32], k: usize) -> Result<Vec<(MemoryId, f32)>> {
        let nprobe = self.ivf_nprobe(ns).unwrap_or(self.settings.nprobe);
        self.search_with(ns, q, k, Some(nprobe))
    }

    fn contains(&self, id: MemoryId) -> bool {
        self.owner.contains_key(&id)
    }

    fn len(&self) -> usize {
        self.owner.len()
    }

    fn clear(&mut self) {
        self.trainings.clear();
        self.recalibrations.clear();
        self.spaces.clear();
        self.owner.clear();
        self.changed.clear();
        self.dims = 0;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::{pseudo, test_ns as ns};
    use super::*;

    fn small(min: usize) -> AnnSettings {
        AnnSettings { kind: AnnKind::Ivf, min_vectors: min, lists: 8, nprobe: 2, recall_target: 0.95 }
    }

    /// Recall@10 of `v`'s search against the exact scan, over fresh pseudo-random queries.
    fn recall_vs_exact(v: &AnnVectors, n: &Namespace, d: usize) -> f64 {
        recall_of(v, n, d, |q| v.search(n, q, 10).unwrap())
    }

    /// Recall@10 of `search` against `v`'s exact scan, over fresh pseudo-random queries.
    fn recall_of(v: &AnnVectors, n: &Namespace, d: usize, search: impl Fn(&[f32]) -> Vec<(MemoryId, f32)>) -> f64 {
        let mut hits = 0;
        for i in 0..40u64 {
            let q = pseudo(1_000_000 + i, d);
            let exact: Vec<MemoryId> = v.search_exact(n, &q, 10).unwrap().into_iter().map(|h| h.0).collect();
            hits += search(&q).iter().filter(|h| exact.contains(&h.0)).count();
        }
        hits as f64 / 400.0
    }

    /// 3,000 pseudo-random vectors of `d` dims in namespace "a": an IVF of 32 lists trained and
    /// calibrated (recall target .95) from a floor of one probe.
    fn calibrated_on_3000(d: usize) -> AnnVectors {
        let settings = AnnSettings { kind: AnnKind::Ivf, min_vectors: 3000, lists: 32, nprobe: 1, recall_target: 0.95 };
        let mut v = AnnVectors::new(settings);
        for i in 0..3000u64 {
            v.upsert(&ns("a"), MemoryId(i as i64 + 1), &pseudo(i, d)).unwrap();
        }
        v.finish_training();
        v
    }

    #[test]
    fn the_probe_count_is_calibrated_again_as_the_ivf_fills_up() {
        let d = 32;
        let mut v = calibrated_on_3000(d);
        let at_training = v.state_of(&ns("a")).unwrap();
        assert_eq!((at_training.trained_rows, at_training.calibrated_rows), (3000, 3000));
        // 19% more: not yet; 20% more: calibrated again on the grown lists, off the write path.
        for i in 3000..3570u64 {
            v.upsert(&ns("a"), MemoryId(i as i64 + 1), &pseudo(i, d)).unwrap();
        }
        assert!(!v.state_of(&ns("a")).unwrap().training, "19% more rows: nothing started");
        for i in 3570..3600u64 {
            v.upsert(&ns("a"), MemoryId(i as i64 + 1), &pseudo(i, d)).unwrap();
        }
        assert!(v.state_of(&ns("a")).unwrap().training, "20% more rows: a calibration is in flight");
        v.finish_training();
        let grown = v.state_of(&ns("a")).unwrap();
        assert_eq!((grown.trained_rows, grown.calibrated_rows), (3000, 3600), "same IVF, calibrated at 3600 rows");
        assert!(!grown.training);
        assert!(recall_vs_exact(&v, &ns("a"), d) >= 0.9, "the new count keeps the recall");
        v.check();
    }

    #[test]
    fn the_probe_count_is_calibrated_so_structureless_vectors_keep_their_recall() {
        // Uniformly spread vectors: a query's true neighbours sit in many lists, so one probe
        // (the configured floor here) finds few of them; calibration must raise it.
        let d = 32;
        let v = calibrated_on_3000(d);
        let p = v.ivf_nprobe(&ns("a")).unwrap();
        assert!(p > 1, "calibration kept the floor of 1 probe on structureless vectors");
        assert!(p <= 32);
        // Bypass calibration: search the same vectors with the floor itself.
        let uncalibrated = recall_of(&v, &ns("a"), d, |q| v.search_with(&ns("a"), q, 10, Some(1)).unwrap());
        let calibrated = recall_vs_exact(&v, &ns("a"), d);
        assert!(calibrated >= 0.9, "calibrated recall@10 {calibrated} (probes {p})");
        assert!(calibrated > uncalibrated, "calibrated {calibrated} vs one probe {uncalibrated}");
    }

    #[test]
    fn a_calibration_in_steps_counts_what_the_full_one_counts_and_shares_one_step() {
        let d = 32;
        let v = calibrated_on_3000(d);
        let space = &v.spaces[&ns("a")];
        let full = calibrate::probes_for_recall(space, d, 1, 0.95);
        assert!(full > 1 && full < 32, "a count between the floor and every list: {full}");
        let mut r = Recalibration::start(space, d, 1, 0.95).unwrap();
        // One step of 300 rows (~94 per list): at most that step's lists are shared.
        r.feed(space, 300);
        let step = 1 + space
            .blocks
            .iter()
            .scan(0, |rows, b| {
                *rows += b.len();
                Some(*rows)
            })
            .take_while(|r| *r < 300)
            .count();
        let shared = space.blocks.iter().filter(|b| Arc::strong_count(b) > 1).count();
        assert!(step < 8 && shared <= step, "{shared} lists shared with the calibration (a step: {step})");
        r.feed(space, usize::MAX);
        assert_eq!(r.wait(), Some(full), "the same count as the calibration on the whole space");
        assert!(space.blocks.iter().all(|b| Arc::strong_count(b) == 1), "nothing kept after the end");
    }

    #[test]
    fn clustered_vectors_keep_a_small_probe_count() {
        // 16 tight clusters, one per list: the floor of 2 probes already finds every neighbour.
        let d = 32;
        let mut v = AnnVectors::new(AnnSettings {
            kind: AnnKind::Ivf,
            min_vectors: 3200,
            lists: 16,
            nprobe: 2,
            recall_target: 0.95,
        });
        for i in 0..3200u64 {
            let centre = pseudo(i % 16, d);
            let noise = pseudo(10_000 + i, d);
            let mut x: Vec<f32> = centre.iter().zip(&noise).map(|(c, e)| c + 0.05 * e).collect();
            let n = x.iter().map(|a| a * a).sum::<f32>().sqrt();
            x.iter_mut().for_each(|a| *a /= n);
            v.upsert(&ns("c"), MemoryId(i as i64 + 1), &x).unwrap();
        }
        v.finish_training();
        assert_eq!(v.ivf_nprobe(&ns("c")), Some(2));
    }

    #[test]
    fn trains_at_the_threshold_follows_removals_and_drops_when_small() {
        let mut v = AnnVectors::new(small(100));
        let a = ns("a");
        for i in 0..99 {
            v.upsert(&a, MemoryId(i), &pseudo(i as u64, 16)).unwrap();
        }
        assert_eq!(v.ivf_lists(&a), None, "below the threshold: exact");
        v.upsert(&a, MemoryId(99), &pseudo(99, 16)).unwrap();
        v.finish_training();
        assert_eq!(v.ivf_lists(&a), Some(8));
        assert_eq!(v.take_ivf_changes(), vec![a.clone()]);
        // Removals, replacements and moves keep the lists in step with the rows.
        for i in (0..100).step_by(3) {
            assert!(v.remove(MemoryId(i)));
        }
        v.upsert(&a, MemoryId(1), &pseudo(1_000, 16)).unwrap();
        v.upsert(&ns("b"), MemoryId(2), &pseudo(2, 16)).unwrap();
        v.check();
        for q in 0..20 {
            let hits = v.search(&a, &pseudo(5_000 + q, 16), 100).unwrap();
            assert!(hits.iter().all(|h| h.0 .0 % 3 != 0 && h.0 != MemoryId(2)), "a removed id came back");
        }
        // Under half the threshold: exact again, and the change is recorded.
        for i in 0..100 {
            v.remove(MemoryId(i));
            if v.count(&a) < 50 {
                break;
            }
        }
        v.check();
        assert_eq!(v.ivf_lists(&a), None);
        assert_eq!(v.take_ivf_changes(), vec![a]);
    }

    #[test]
    fn retrains_after_growth_and_restores_from_a_snapshot() {
        let mut v = AnnVectors::new(small(50));
        let a = ns("a");
        for i in 0..50 {
            v.upsert(&a, MemoryId(i), &pseudo(i as u64, 16)).unwrap();
        }
        v.finish_training();
        for i in 50..199 {
            v.upsert(&a, MemoryId(i), &pseudo(i as u64, 16)).unwrap();
        }
        assert!(!v.training(&a));
        assert_eq!(v.spaces[&a].coarse.as_ref().unwrap().trained_rows, 50);
        v.upsert(&a, MemoryId(199), &pseudo(199, 16)).unwrap();
        v.finish_training();
        assert_eq!(v.spaces[&a].coarse.as_ref().unwrap().trained_rows, 200, "retrained at 4× the rows");
        // Restore: same lists from the snapshot, nothing retrained.
        let snap = v.ivf_snapshot(&a).unwrap();
        let mut w = AnnVectors::new(small(50));
        for (id, codes, scale, _) in v.vectors_of(&a) {
            w.replay_upsert_code(&a, id, Code { codes: codes.to_vec(), scale }, None).unwrap();
        }
        w.restore_ivf(&a, Some(snap)).unwrap();
        w.settle();
        assert!(w.take_ivf_changes().is_empty(), "a restored IVF is not retrained");
        for id in 0..200 {
            assert_eq!(w.list_of(MemoryId(id)), v.list_of(MemoryId(id)));
        }
        let q = pseudo(77, 16);
        assert_eq!(w.search(&a, &q, 10).unwrap(), v.search(&a, &q, 10).unwrap());
        // `exact` drops it at the settle.
        let mut x = AnnVectors::new(AnnSettings { kind: AnnKind::Exact, ..small(50) });
        x.replay_upsert(&a, MemoryId(1), &pseudo(1, 16), Some(3)).unwrap();
        x.restore_ivf(&a, v.ivf_snapshot(&a)).unwrap();
        x.settle();
        assert_eq!(x.ivf_lists(&a), None);
        assert!(AnnSettings { nprobe: 0, ..small(50) }.validate().unwrap_err().to_string().contains("ivf_nprobe"));
        assert!(AnnSettings { recall_target: 1.5, ..small(50) }
            .validate()
            .unwrap_err()
            .to_string()
            .contains("ivf_recall_target"));
    }

    #[test]
    fn a_training_outgrown_while_it_ran_is_followed_by_another_without_a_write() {
        let mut v = AnnVectors::new(small(100));
        let a = ns("a");
        let gate = v.training_gate();
        let held = gate.lock().unwrap();
        // Trained on 100 rows; 4× that is written while the training cannot progress.
        for i in 0..450 {
            v.upsert(&a, MemoryId(i), &pseudo(i as u64, 16)).unwrap();
        }
        assert_eq!(v.trainings_started(), 1, "writes during a training start no other");
        drop(held);
        // Waiting for the training puts it in place, which starts the follow-up it waits for
        // too: the IVF trained on 100 of 450 rows is retrained on all 450.
        v.finish_training();
        assert_eq!(v.trainings_started(), 2);
        assert_eq!(v.spaces[&a].coarse.as_ref().unwrap().trained_rows, 450);
        assert!(!v.training(&a));
        v.check();
    }

    #[test]
    fn filing_a_batch_gives_what_filing_one_by_one_gives() {
        let (a, b) = (ns("a"), ns("b"));
        let mut one = AnnVectors::new(small(100));
        let mut many = AnnVectors::new(small(100));
        // Trained on exactly 100 rows (no retraining below 400, so nothing depends on timing).
        for i in 0..300u64 {
            one.upsert(&a, MemoryId(i as i64), &pseudo(i, 16)).unwrap();
            many.upsert(&a, MemoryId(i as i64), &pseudo(i, 16)).unwrap();
            if i == 99 {
                one.finish_training();
                many.finish_training();
            }
        }
        assert!(many.ivf_lists(&a).is_some());
        // New rows, replacements and a move to another namespace, in one batch.
        let vectors: Vec<(Namespace, MemoryId, Vec<f32>)> = (250..390u64)
            .map(|i| (if i == 260 { b.clone() } else { a.clone() }, MemoryId(i as i64), pseudo(7_000 + i, 16)))
            .collect();
        for (n, id, v) in &vectors {
            one.upsert(n, *id, v).unwrap();
        }
        let batch: Vec<(&Namespace, MemoryId, &[f32])> = vectors.iter().map(|(n, id, v)| (n, *id, &v[..])).collect();
        let codes = many.upsert_many(&batch).unwrap();
        assert_eq!(codes[0], Code::of(&vectors[0].2));
        many.check();
        for i in 0..390 {
            assert_eq!(many.list_of(MemoryId(i)), one.list_of(MemoryId(i)), "memory {i}");
        }
        assert!(!many.training(&a) && !one.training(&a));
        assert_eq!(many.namespace_of(MemoryId(260)), Some(&b));
        let q = pseudo(42, 16);
        assert_eq!(many.search(&a, &q, 10).unwrap(), one.search(&a, &q, 10).unwrap());
        // A bad vector anywhere in the batch changes nothing.
        let bad = [f32::NAN; 16];
        let before = many.len();
        assert!(many.upsert_many(&[(&a, MemoryId(900), &pseudo(1, 16)[..]), (&a, MemoryId(901), &bad[..])]).is_err());
        assert_eq!(many.len(), before);
    }

    #[test]
    fn probing_every_list_is_exact() {
        let mut v = AnnVectors::new(AnnSettings { nprobe: 8, ..small(10) });
        let a = ns("a");
        for i in 0..500 {
            v.upsert(&a, MemoryId(i), &pseudo(i as u64, 16)).unwrap();
        }
        v.finish_training();
        assert!(v.ivf_lists(&a).is_some());
        for q in 0..10 {
            let q = pseudo(9_000 + q, 16);
            assert_eq!(v.search(&a, &q, 20).unwrap(), v.search_exact(&a, &q, 20).unwrap());
        }
    }

    #[test]
    fn writes_during_a_training_do_not_wait_for_it_and_reach_its_result() {
        let mut v = AnnVectors::new(small(100));
        let a = ns("a");
        let gate = v.training_gate();
        let held = gate.lock().unwrap();
        // The write that makes the IVF due starts a training, which waits at the gate.
        for i in 0..100 {
            v.upsert(&a, MemoryId(i), &pseudo(i as u64, 16)).unwrap();
        }
        assert!(v.training(&a), "a training is in flight");
        // Writes go on while it cannot progress: inserts, a replacement, removals.
        for i in 100..150 {
            v.upsert(&a, MemoryId(i), &pseudo(i as u64, 16)).unwrap();
        }
        v.upsert(&a, MemoryId(5), &pseudo(5_005, 16)).unwrap();
        for i in (0..150).step_by(10) {
            assert!(v.remove(MemoryId(i)));
        }
        assert!(v.training(&a) && v.ivf_lists(&a).is_none(), "still exact: the training could not run");
        assert_eq!(v.search(&a, &pseudo(5_005, 16), 1).unwrap()[0].0, MemoryId(5), "the written vector is served");
        drop(held);
        v.finish_training();
        assert_eq!(v.ivf_lists(&a), Some(8), "the training's result is in place");
        assert_eq!(v.take_ivf_changes(), vec![a.clone()]);
        v.check();
        assert_eq!(v.count(&a), 135);
        // What was written during the training is in its result: the replacement, the late
        // inserts, and none of the removed.
        assert_eq!(v.search(&a, &pseudo(5_005, 16), 1).unwrap()[0].0, MemoryId(5));
        let all = v.search_exact(&a, &pseudo(1, 16), 200).unwrap();
        assert_eq!(all.len(), 135);
        assert!(all.iter().all(|h| h.0 .0 % 10 != 0));
        assert!(all.iter().any(|h| h.0 == MemoryId(149)));
    }
}
