//! What can go wrong loading or calling a plugin.
use std::path::PathBuf;

/// A plugin error. Every variant names the library or plugin.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The file is not there.
    #[error("plugin library {path} not found{hint}")]
    NotFound {
        /// The path tried.
        path: PathBuf,
        /// Where the path came from, or other paths tried.
        hint: String,
    },
    /// The file is there but the system loader refuses it.
    #[error("{path} is not a loadable shared library")]
    NotALibrary {
        /// The file.
        path: PathBuf,
        /// The loader's reason.
        #[source]
        source: libloading::Error,
    },
    /// A library without any Mnemo entry point.
    #[error("{path} is not a Mnemo plugin: it exports no `{symbol}` symbol (build it with mnemo-plugin-sdk's export_plugin!)")]
    MissingSymbol {
        /// The library.
        path: PathBuf,
        /// The symbol looked for.
        symbol: String,
    },
    /// Built for another ABI version.
    #[error("{path} was built for Mnemo plugin ABI version {plugin}, but this mnemo speaks plugin ABI version {host}; rebuild the plugin against the mnemo-plugin-sdk of this mnemo")]
    AbiVersion {
        /// The library.
        path: PathBuf,
        /// The plugin's ABI version.
        plugin: u32,
        /// The host's ABI version.
        host: u32,
    },
    /// Same version, but the entry table is smaller than the host's (a corrupt or hand-made table).
    #[error("{path}: entry table is {plugin} bytes, this mnemo expects {host} bytes for ABI version 1")]
    TableSize {
        /// The library.
        path: PathBuf,
        /// The plugin's size.
        plugin: u32,
        /// The host's size.
        host: u32,
    },
    /// The entry point returned null.
    #[error("{path}: the entry point returned no table")]
    NullTable {
        /// The library.
        path: PathBuf,
    },
    /// The plugin answered something that is not the JSON the ABI defines.
    #[error("plugin {plugin} answered malformed JSON to {what}: {error}")]
    MalformedJson {
        /// The plugin (name or path).
        plugin: String,
        /// Which request.
        what: String,
        /// The decoder's message.
        error: String,
    },
    /// The plugin reported an error (including a caught panic).
    #[error("plugin {plugin} failed {what}: {message}")]
    PluginFailed {
        /// The plugin.
        plugin: String,
        /// Which request.
        what: String,
        /// Its message.
        message: String,
    },
    /// Two providers for one kind.
    #[error("{role} kind `{kind}` provided by {new} is already registered by {existing}")]
    KindTaken {
        /// The role.
        role: String,
        /// The kind.
        kind: String,
        /// Who registered it first.
        existing: String,
        /// Who tried again.
        new: String,
    },
    /// The blocking thread running a plugin call did not finish (runtime shut down).
    #[error("plugin {plugin}: the call thread did not finish: {message}")]
    Join {
        /// The plugin.
        plugin: String,
        /// The join error.
        message: String,
    },
}

impl HostError {
    /// Whether the plugin's answer is at fault (it is not the JSON the ABI defines), rather
    /// than the call: what the adapters classify as a bad answer.
    pub fn is_bad_answer(&self) -> bool {
        matches!(self, HostError::MalformedJson { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_malformed_json_is_a_bad_answer() {
        let malformed = HostError::MalformedJson { plugin: "p".into(), what: "a lookup".into(), error: "EOF".into() };
        assert!(malformed.is_bad_answer());
        let failed = HostError::PluginFailed { plugin: "p".into(), what: "a lookup".into(), message: "panic".into() };
        assert!(!failed.is_bad_answer());
        let join = HostError::Join { plugin: "p".into(), message: "cancelled".into() };
        assert!(!join.is_bad_answer());
    }
}
