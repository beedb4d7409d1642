//! Models read from disk once per process and shared after: the sentence encoders and the
//! static models each keep one of these, keyed by what makes a loaded model different.
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use crate::error::LocalEmbedError;

/// The models loaded so far, by key.
pub(crate) struct Loaded<K, T>(Mutex<HashMap<K, Arc<T>>>);

impl<K: Eq + Hash, T> Loaded<K, T> {
    pub(crate) fn new() -> Self {
        Loaded(Mutex::new(HashMap::new()))
    }

    /// The model under `key`, loaded with `load` the first time. The lock is held while
    /// loading, so two threads asking at once read the files once.
    pub(crate) fn get_or_load(
        &self,
        key: K,
        load: impl FnOnce() -> Result<T, LocalEmbedError>,
    ) -> Result<Arc<T>, LocalEmbedError> {
        // A poisoned lock only means another thread panicked while loading: the map is intact.
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = map.get(&key) {
            return Ok(m.clone());
        }
        let m = Arc::new(load()?);
        map.insert(key, m.clone());
        Ok(m)
    }

    /// How many models are loaded.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}
