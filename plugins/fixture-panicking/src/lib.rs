//! A plugin whose grounder panics on every lookup: the SDK must turn the panic into an error
//! and the host must escalate, never crash and never act.
use mnemo_plugin_sdk::{export_plugin, Grounded, GrounderPlugin, PluginError, Settings};

/// Panics on lookup.
pub struct Panicking;

impl GrounderPlugin for Panicking {
    const KIND: &'static str = "panicking";
    const ABOUT: &'static str = "test fixture: panics on every lookup";
    fn new(_: &Settings) -> Result<Self, PluginError> {
        Ok(Panicking)
    }
    #[allow(clippy::panic)]
    fn lookup(&self, entity: &str, _: &str) -> Result<Option<Grounded>, PluginError> {
        panic!("the fixture panics looking up {entity}")
    }
}

export_plugin!(grounders: [Panicking]);
