//! Configuration: the embedded `config/default.toml`, then each `--config` file merged over it
//! in order. Unknown keys are rejected; errors name the file and the key.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mnemo_contract::EnginePolicy;
use mnemo_report::fnv1a_hex;

use crate::error::AgentError;

/// The shipped default configuration (offline, embedded).
pub const DEFAULT_TOML: &str = include_str!("../../../config/default.toml");

/// Plugin sections: a table with a `kind`; changing the kind replaces the section wholesale.
pub const PLUGIN_SECTIONS: [&str; 5] = ["store", "index", "embedder", "reasoner", "assessor"];
/// Policy sections (parsed into `EnginePolicy`).
pub const POLICY_SECTIONS: [&str; 4] = ["recall", "decay", "kinds", "claims"];
/// The section naming the corroboration sources the command line vouches for.
pub const SOURCES: &str = "sources";
/// Array of grounder tables.
pub const GROUNDERS: &str = "grounders";
/// Array of plugin libraries to load (`[[plugins]] path = "…"`), relative to the file naming them.
pub const PLUGINS: &str = "plugins";
/// The model seam (`[llm]`): a section shared by every component that calls a model, given to
/// their factories beside their own section (`EmbedderContext::llm`, `ReasonerContext::llm`).
pub const LLM: &str = "llm";
/// The HTTP server's section (`[serve]`, `[[serve.tokens]]`), read by `mnemo serve`.
pub const SERVE: &str = "serve";
/// Escalations (`[escalation] record`, `[[escalation.sinks]]`: where they are sent); see
/// `crate::escalation::sinks`. A later file's `sinks` replace an earlier file's.
pub const ESCALATION: &str = "escalation";
/// Time (`[time] max_future_skew_secs`): how far a stated time may run ahead of the clock.
pub const TIME: &str = "time";
/// The MCP server's section (`[mcp] erase`: whether the `erase` tool is offered; off by
/// default).
pub const MCP: &str = "mcp";
/// The default of `[time] max_future_skew_secs`: five minutes.
pub const DEFAULT_MAX_FUTURE_SKEW_SECS: u64 = 300;

/// A resolved configuration.
#[derive(Clone, Debug)]
pub struct Config {
    table: toml::Table,
    /// Which file last set each top-level section (for error messages).
    origins: BTreeMap<String, String>,
    files: Vec<String>,
    /// The directory of the file that last set each top-level section: paths in it (e.g. a
    /// grounder's CSV) resolve against it.
    dirs: BTreeMap<String, PathBuf>,
    policy: EnginePolicy,
}

impl Config {
    /// The embedded default.
    pub fn embedded_default() -> Result<Config, AgentError> {
        let mut c = Config {
            table: toml::Table::new(),
            origins: BTreeMap::new(),
            files: vec![],
            dirs: BTreeMap::new(),
            policy: EnginePolicy::default(),
        };
        c.merge_text(DEFAULT_TOML, "embedded default config", None)?;
        Ok(c)
    }

    /// The default merged with `files`, in order.
    pub fn load(files: &[PathBuf]) -> Result<Config, AgentError> {
        let mut c = Config::embedded_default()?;
        for f in files {
            let text = std::fs::read(f).map_err(|e| AgentError::Io {
                action: "read",
                file: f.display().to_string(),
                error: e,
            })?;
            let text = String::from_utf8(text).map_err(|e| AgentError::Config {
                file: f.display().to_string(),
                message: format!("not UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to()),
            })?;
            c.merge_text(&text, &f.display().to_string(), Some(f.parent().unwrap_or_else(|| Path::new("."))))?;
            let dir = f.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
            for (key, origin) in &c.origins {
                if *origin == f.display().to_string() {
                    c.dirs.insert(key.clone(), dir.clone());
                }
            }
            c.files.push(f.display().to_string());
        }
        Ok(c)
    }

    /// The corroboration sources declared in `[sources] declared`: principals the command line
    /// vouches for. A `--source` label not declared here is the operator's own word and counts
    /// as the operator (one source), however many labels the operator makes up.
    pub fn declared_sources(&self) -> Vec<String> {
        self.table.get(SOURCES).and_then(|t| t.as_table()).and_then(|t| declared_of(t).ok()).unwrap_or_default()
    }

    /// This config with `overrides` merged (e.g. a scenario's `[settings]`).
    pub fn with_overrides(&self, overrides: &toml::Table, origin: &str) -> Result<Config, AgentError> {
        let mut c = self.clone();
        c.merge_table(overrides.clone(), origin, None)?;
        Ok(c)
    }

    fn merge_text(&mut self, text: &str, origin: &str, base: Option<&Path>) -> Result<(), AgentError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| AgentError::Config {
            file: origin.to_string(),
            message: mnemo_contract::text::toml_error(&e, Some(text)),
        })?;
        self.merge_table(table, origin, base)
    }

    /// `base`: the directory of the file being merged (plugin paths are relative to it).
    fn merge_table(&mut self, table: toml::Table, origin: &str, base: Option<&Path>) -> Result<(), AgentError> {
        let err = |m: String| AgentError::Config { file: origin.to_string(), message: m };
        for (key, value) in table {
            if key == PLUGINS {
                let libraries = crate::plugins::resolve_entries(&value, base).map_err(err)?;
                let slot = self.table.entry(key.clone()).or_insert_with(|| toml::Value::Array(Vec::new()));
                if let toml::Value::Array(all) = slot {
                    // every file may add libraries: they accumulate
                    all.extend(libraries.into_iter().map(|p| {
                        toml::Value::Table(toml::Table::from_iter([(
                            "path".to_string(),
                            toml::Value::String(p.display().to_string()),
                        )]))
                    }));
                }
                self.origins.insert(key, origin.to_string());
                continue;
            }
            let known = PLUGIN_SECTIONS.contains(&key.as_str())
                || POLICY_SECTIONS.contains(&key.as_str())
                || key == GROUNDERS
                || key == SOURCES
                || key == LLM
                || key == SERVE
                || key == ESCALATION
                || key == TIME
                || key == MCP;
            if !known {
                return Err(err(format!(
                    "unknown key `{key}`; known: {}, {}, {GROUNDERS}, {SOURCES}, {PLUGINS}, {LLM}, {SERVE}, {ESCALATION}, \
                     {TIME}, {MCP}",
                    PLUGIN_SECTIONS.join(", "),
                    POLICY_SECTIONS.join(", ")
                )));
            }
            if key == GROUNDERS {
                let arr = value
                    .as_array()
                    .ok_or_else(|| err(format!("`{GROUNDERS}` must be an array of tables ([[grounders]])")))?;
                for (i, g) in arr.iter().enumerate() {
                    let t = g.as_table().ok_or_else(|| err(format!("{GROUNDERS}[{i}] must be a table")))?;
                    if !t.get("kind").is_some_and(|k| k.is_str()) {
                        return Err(err(format!("{GROUNDERS}[{i}].kind must be a string naming a grounder kind")));
                    }
                }
                self.table.insert(key.clone(), value);
                self.dirs.remove(&key);
                self.origins.insert(key, origin.to_string());
                continue;
            }
            let new = value.as_table().ok_or_else(|| err(format!("`{key}` must be a table ([{key}])")))?.clone();
            if key == SOURCES {
                declared_of(&new).map_err(err)?;
            }
            if key == TIME {
                time_skew_of(&new).map_err(err)?;
            }
            if key == MCP {
                mcp_erase_of(&new).map_err(err)?;
            }
            if key == ESCALATION {
                // Checked as written, so that a mistake names this file.
                crate::escalation::EscalationSettings::from_table(&new, origin)?;
            }
            if PLUGIN_SECTIONS.contains(&key.as_str()) {
                if let Some(k) = new.get("kind") {
                    if !k.is_str() {
                        return Err(err(format!("{key}.kind must be a string")));
                    }
                }
                let old_kind =
                    self.table.get(&key).and_then(|t| t.get("kind")).and_then(|k| k.as_str()).map(str::to_string);
                let new_kind = new.get("kind").and_then(|k| k.as_str()).map(str::to_string);
                if new_kind.is_some() && new_kind != old_kind {
                    // another implementation: its settings start from nothing
                    self.table.insert(key.clone(), toml::Value::Table(new));
                    self.dirs.remove(&key);
                    self.origins.insert(key, origin.to_string());
                    continue;
                }
            }
            let slot = self.table.entry(key.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            deep_merge(slot, toml::Value::Table(new));
            self.dirs.remove(&key);
            self.origins.insert(key, origin.to_string());
        }
        self.policy = self.parse_policy(origin)?;
        Ok(())
    }

    fn parse_policy(&self, origin: &str) -> Result<EnginePolicy, AgentError> {
        let mut t = toml::Table::new();
        for k in POLICY_SECTIONS {
            if let Some(v) = self.table.get(k) {
                t.insert(k.to_string(), v.clone());
            }
        }
        let p: EnginePolicy = t.try_into().map_err(|e: toml::de::Error| AgentError::Config {
            file: origin.to_string(),
            message: format!("in [recall]/[decay]/[kinds]/[claims]: {}", mnemo_contract::text::toml_error(&e, None)),
        })?;
        p.validate().map_err(|e| AgentError::Config { file: origin.to_string(), message: e.to_string() })?;
        Ok(p)
    }

    /// The directory paths of `section` resolve against: that of the config file that set it
    /// last, or the current directory (embedded default, scenario settings).
    pub fn section_dir(&self, section: &str) -> PathBuf {
        self.dirs.get(section).cloned().unwrap_or_else(|| PathBuf::from("."))
    }

    /// The engine policy.
    pub fn policy(&self) -> &EnginePolicy {
        &self.policy
    }

    /// A plugin section: its kind and its settings without `kind`, and where it came from.
    pub fn plugin(&self, section: &str) -> Result<(String, toml::Table, String), AgentError> {
        let origin = self.origins.get(section).cloned().unwrap_or_else(|| "embedded default config".into());
        let t = self.table.get(section).and_then(|v| v.as_table()).ok_or_else(|| AgentError::Config {
            file: origin.clone(),
            message: format!("missing [{section}] section"),
        })?;
        split_kind(t, section, &origin)
    }

    /// The `[llm]` section (empty when not configured: every key has a default). It is given
    /// whole to the factories that may call a model, never spliced into their sections; the
    /// model seam reads it into its typed settings (mnemo-llm's `LlmSettings`, which refuses
    /// unknown keys), which this crate does not link.
    pub fn llm(&self) -> toml::Table {
        self.table.get(LLM).and_then(|v| v.as_table()).cloned().unwrap_or_default()
    }

    /// The `[serve]` section (empty when not configured) and the file that set it.
    pub fn serve(&self) -> (toml::Table, String) {
        let origin = self.origins.get(SERVE).cloned().unwrap_or_else(|| "embedded default config".into());
        (self.table.get(SERVE).and_then(|v| v.as_table()).cloned().unwrap_or_default(), origin)
    }

    /// The `[escalation]` settings (defaults when not configured).
    pub fn escalation(&self) -> Result<crate::escalation::EscalationSettings, AgentError> {
        let origin = self.origins.get(ESCALATION).cloned().unwrap_or_else(|| "embedded default config".into());
        let table = self.table.get(ESCALATION).and_then(|v| v.as_table()).cloned().unwrap_or_default();
        crate::escalation::EscalationSettings::from_table(&table, &origin)
    }

    /// `[time] max_future_skew_secs`: how far a stated time (`at`, `--at`) may run ahead of the
    /// clock (default five minutes); checked when the file was merged.
    pub fn max_future_skew(&self) -> std::time::Duration {
        let t = self.table.get(TIME).and_then(|v| v.as_table()).cloned().unwrap_or_default();
        std::time::Duration::from_secs(time_skew_of(&t).unwrap_or(DEFAULT_MAX_FUTURE_SKEW_SECS))
    }

    /// `[mcp] erase`: whether `mnemo mcp` offers the `erase` tool (default false: an erasure
    /// cannot be undone, and an MCP client is a model); checked when the file was merged.
    pub fn mcp_erase(&self) -> bool {
        let t = self.table.get(MCP).and_then(|v| v.as_table()).cloned().unwrap_or_default();
        mcp_erase_of(&t).unwrap_or(false)
    }

    /// The `[[grounders]]` entries: (kind, settings, origin).
    pub fn grounders(&self) -> Result<Vec<(String, toml::Table, String)>, AgentError> {
        let origin = self.origins.get(GROUNDERS).cloned().unwrap_or_default();
        let Some(arr) = self.table.get(GROUNDERS).and_then(|v| v.as_array()) else { return Ok(vec![]) };
        arr.iter()
            .enumerate()
            .map(|(i, g)| {
                let t = g.as_table().ok_or_else(|| AgentError::Config {
                    file: origin.clone(),
                    message: format!("grounders[{i}] must be a table"),
                })?;
                split_kind(t, &format!("grounders[{i}]"), &origin)
            })
            .collect()
    }

    /// The plugin libraries to load (`[[plugins]]`), resolved, in order.
    pub fn plugin_libraries(&self) -> Vec<PathBuf> {
        let Some(arr) = self.table.get(PLUGINS).and_then(|v| v.as_array()) else { return vec![] };
        arr.iter().filter_map(|t| t.get("path").and_then(|p| p.as_str())).map(PathBuf::from).collect()
    }

    /// The resolved configuration as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.table).unwrap_or_default()
    }

    /// FNV-1a of the resolved configuration.
    pub fn hash(&self) -> String {
        fnv1a_hex(self.to_toml().as_bytes())
    }

    /// A short name: the last file's stem, or "default".
    pub fn name(&self) -> String {
        self.files
            .last()
            .and_then(|f| Path::new(f).file_stem())
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "default".to_string())
    }

    /// The files merged over the default, in order.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// The value at a dotted path (e.g. "assessor.threshold"), for reports.
    pub fn get(&self, dotted: &str) -> Option<&toml::Value> {
        let mut parts = dotted.split('.');
        let mut v = self.table.get(parts.next()?)?;
        for p in parts {
            v = v.as_table()?.get(p)?;
        }
        Some(v)
    }
}

fn split_kind(t: &toml::Table, section: &str, origin: &str) -> Result<(String, toml::Table, String), AgentError> {
    let kind = t
        .get("kind")
        .and_then(|k| k.as_str())
        .ok_or_else(|| AgentError::Config {
            file: origin.to_string(),
            message: format!("[{section}] needs kind = \"…\""),
        })?
        .to_string();
    let mut settings = t.clone();
    settings.remove("kind");
    Ok((kind, settings, format!("{origin} [{section}]")))
}

fn deep_merge(slot: &mut toml::Value, new: toml::Value) {
    match (slot, new) {
        (toml::Value::Table(a), toml::Value::Table(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, new) => *slot = new,
    }
}

/// `[sources]`'s one key, `declared`: an array of non-empty strings.
fn declared_of(t: &toml::Table) -> Result<Vec<String>, String> {
    if let Some(k) = t.keys().find(|k| k.as_str() != "declared") {
        return Err(format!("unknown key `{SOURCES}.{k}`; known: declared"));
    }
    let Some(v) = t.get("declared") else { return Ok(vec![]) };
    let arr = v.as_array().ok_or_else(|| format!("`{SOURCES}.declared` must be an array of source names"))?;
    arr.iter()
        .map(|x| match x.as_str() {
            Some(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            _ => Err(format!("`{SOURCES}.declared` entries must be non-empty strings, got {x}")),
        })
        .collect()
}

/// `[mcp]`: only `erase`, a boolean.
fn mcp_erase_of(t: &toml::Table) -> Result<bool, String> {
    if let Some(k) = t.keys().find(|k| k.as_str() != "erase") {
        return Err(format!("[{MCP}]: unknown key `{k}`; known: erase"));
    }
    match t.get("erase") {
        None => Ok(false),
        Some(toml::Value::Boolean(b)) => Ok(*b),
        Some(other) => Err(format!("[{MCP}] erase must be true or false, got {other}")),
    }
}

/// `[time]`: only `max_future_skew_secs`, a whole number of seconds from 0 to a year.
fn time_skew_of(t: &toml::Table) -> Result<u64, String> {
    if let Some(k) = t.keys().find(|k| k.as_str() != "max_future_skew_secs") {
        return Err(format!("[{TIME}]: unknown key `{k}`; known: max_future_skew_secs"));
    }
    match t.get("max_future_skew_secs") {
        None => Ok(DEFAULT_MAX_FUTURE_SKEW_SECS),
        Some(toml::Value::Integer(n)) if (0..=31_536_000).contains(n) => Ok(u64::try_from(*n).unwrap_or(0)),
        Some(_) => Err(format!(
            "[{TIME}] max_future_skew_secs must be a whole number of seconds from 0 to 31536000 (a year); default \
             {DEFAULT_MAX_FUTURE_SKEW_SECS}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn default_parses() {
        let c = Config::embedded_default().unwrap();
        assert_eq!(c.policy().recall.budget_tokens, 1024);
        assert_eq!(c.plugin("store").unwrap().0, "sqlite");
    }

    #[test]
    fn malformed_toml_names_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "bad.toml", "[recall]\nbudget_tokens = = 3\n");
        let e = Config::load(&[p]).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("line 2"), "{e}");
    }

    #[test]
    fn unknown_keys_rejected_with_name() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "x.toml", "[recall]\nbudget_tokenz = 3\n");
        let e = Config::load(&[p]).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("budget_tokenz"), "{e}");
        let p = write(d.path(), "y.toml", "[nonsense]\na = 1\n");
        let e = Config::load(&[p]).unwrap_err().to_string();
        assert!(e.contains("y.toml") && e.contains("nonsense"), "{e}");
    }

    #[test]
    fn out_of_range_values_rejected() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "q.toml", "[kinds.semantic]\nquota = 0.9\n");
        let e = Config::load(&[p]).unwrap_err().to_string();
        assert!(e.contains("q.toml") && e.contains("quota"), "{e}");
        let p = write(d.path(), "n.toml", "[recall]\nbudget_tokens = -5\n");
        assert!(Config::load(&[p]).unwrap_err().to_string().contains("n.toml"));
    }

    /// `--config /etc/shadow` (or a config file naming a secret value where a number goes):
    /// the error names the file, line and column, never the text.
    #[test]
    fn a_foreign_config_file_is_never_echoed() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "shadow", "root:*:20228:0:99999:7:::\n");
        let e = Config::load(std::slice::from_ref(&p)).unwrap_err().to_string();
        assert!(e.contains("shadow") && e.contains("line 1, column"), "{e}");
        assert!(!e.contains("root") && !e.contains("20228"), "{e}");
        let p = write(d.path(), "s.toml", "[recall]\nbudget_tokens = \"hunter2 is my password\"\n");
        let e = Config::load(&[p]).unwrap_err().to_string();
        assert!(e.contains("s.toml") && !e.contains("hunter2"), "{e}");
    }

    #[test]
    fn overrides_merge_and_change_hash() {
        let c = Config::embedded_default().unwrap();
        let o: toml::Table = "recall.budget_tokens = 512".parse().unwrap();
        let c2 = c.with_overrides(&o, "scenario settings").unwrap();
        assert_eq!(c2.policy().recall.budget_tokens, 512);
        assert_eq!(c2.policy().recall.candidates, 64);
        assert_ne!(c.hash(), c2.hash());
    }

    #[test]
    fn grounder_paths_resolve_against_their_file() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("conf");
        std::fs::create_dir_all(&sub).unwrap();
        let p = write(&sub, "g.toml", "[[grounders]]\nkind = \"table\"\nsource = \"erp\"\n");
        let q = write(d.path(), "r.toml", "[recall]\nbudget_tokens = 100\n");
        let c = Config::load(&[p, q]).unwrap();
        assert_eq!(c.section_dir("grounders"), sub);
        assert_eq!(c.section_dir("recall"), d.path());
        assert_eq!(c.section_dir("store"), PathBuf::from("."));
    }

    #[test]
    fn escalation_sinks_are_read_and_checked_naming_the_file() {
        let d = tempfile::tempdir().unwrap();
        let c = Config::embedded_default().unwrap();
        let s = c.escalation().unwrap();
        assert!(s.record && s.sinks.is_empty(), "no sinks, recording on, by default");
        let p = write(
            d.path(),
            "esc.toml",
            "[[escalation.sinks]]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:9/hook\"\nsecret_env = \"HOOK_SECRET\"\n\
             timeout_ms = 800\nretries = 2\n\n[[escalation.sinks]]\nkind = \"jsonl\"\npath = \"escalations.jsonl\"\n",
        );
        let c = Config::load(&[p]).unwrap();
        assert_eq!(c.escalation().unwrap().sinks.len(), 2);
        assert_eq!(c.section_dir(ESCALATION), d.path());
        let p = write(d.path(), "bad.toml", "[escalation]\nsinkz = []\n");
        let e = Config::load(&[p]).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("sinkz"), "{e}");
    }

    #[test]
    fn changing_kind_replaces_section() {
        let c = Config::embedded_default().unwrap();
        let o: toml::Table = "[store]\nkind = \"other\"\nurl = \"x\"".parse().unwrap();
        let c2 = c.with_overrides(&o, "t").unwrap();
        let (kind, settings, _) = c2.plugin("store").unwrap();
        assert_eq!(kind, "other");
        assert!(settings.get("path").is_none());
    }
}
