//! A Mnemo plugin to copy. To make your own:
//!
//! 1. `cp -r plugins/plugin-template plugins/my-grounder`, and in its Cargo.toml set
//!    `name = "my-grounder"` (the workspace picks up anything under plugins/).
//! 2. Change `KIND`, `ABOUT`, the settings and `lookup` below.
//! 3. `cargo build -p my-grounder` → `target/debug/libmy_grounder.so` (`.dylib` on macOS,
//!    `my_grounder.dll` on Windows).
//! 4. In your config: `[[plugins]] path = "target/debug/my_grounder"` (relative to the config
//!    file; the platform prefix and suffix may be left out) and
//!    `[[grounders]] kind = "my_kind"` with your settings. `mnemo plugins` lists it.
use mnemo_plugin_sdk::{export_plugin, Grounded, GrounderPlugin, PluginError, Settings};
use serde::Deserialize;

/// This grounder's config section (`[[grounders]] kind = "template" …`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateSettings {
    /// The source name recorded as corroboration.
    source: String,
}

/// An example grounder: it knows how many characters an entity's name has. Replace `lookup`
/// with a read of your system of record (open it read-only in `new`).
pub struct TemplateGrounder {
    source: String,
}

impl GrounderPlugin for TemplateGrounder {
    const KIND: &'static str = "template";
    const ABOUT: &'static str = "plugin template: the length of an entity's name (copy me)";

    fn new(settings: &Settings) -> Result<Self, PluginError> {
        let s: TemplateSettings = settings.parse()?;
        if s.source.trim().is_empty() {
            return Err(PluginError(format!("{}: source must not be empty", settings.origin())));
        }
        Ok(TemplateGrounder { source: s.source })
    }

    fn lookup(&self, entity: &str, attribute: &str) -> Result<Option<Grounded>, PluginError> {
        if attribute.trim().eq_ignore_ascii_case("name length") {
            let n = entity.trim().chars().count();
            return Ok(Some(Grounded { value: format!("{n} characters"), source: self.source.clone(), as_of: None }));
        }
        Ok(None) // not held here: the claim is not verifiable by this source
    }
}

export_plugin!(grounders: [TemplateGrounder]);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn answers_only_what_it_holds() {
        let s = Settings::new(serde_json::from_str(r#"{"source":"tpl"}"#).unwrap(), "test", std::path::Path::new("."));
        let g = TemplateGrounder::new(&s).unwrap();
        assert_eq!(g.lookup("Ada", "name length").unwrap().unwrap().value, "3 characters");
        assert!(g.lookup("Ada", "colour").unwrap().is_none());
    }
}
