//! `mnemo backup create FILE`, `mnemo backup restore FILE`: the whole store to a file and back.
use anyhow::{Context as _, Result};

use mnemo_agent::Runtime;
use mnemo_contract::BackupInfo;

use crate::cli::BackupCommand;

fn describe(i: &BackupInfo) -> String {
    let generation = i.identity.as_ref().map(|id| format!(", store generation {}", id.generation)).unwrap_or_default();
    let heads: Vec<String> = i
        .chain_heads
        .iter()
        .map(|h| format!("{} entry {} {}", h.namespace, h.seq, mnemo_contract::chain::hex(&h.hash)))
        .collect();
    let heads = if heads.is_empty() { String::new() } else { format!("; history chain heads: {}", heads.join(", ")) };
    format!("{} memories, {} turns, {} bytes{generation}{heads}", i.memories, i.turns, i.bytes)
}

/// Run a backup subcommand on the runtime's store.
pub async fn run(rt: &Runtime, cmd: &BackupCommand) -> Result<()> {
    match cmd {
        BackupCommand::Create { file, out } => {
            let info = rt.engine().backup(file).await.with_context(|| format!("backing up to {}", file.display()))?;
            if out.json {
                super::emit_json(&info)?;
            } else {
                out!("backed up to {}: {}", file.display(), describe(&info));
            }
        }
        BackupCommand::Restore { file, keep_erased, out } => {
            let bar = indicatif::ProgressBar::new(0);
            let b = bar.clone();
            let (info, sync, erasures) = rt
                .engine()
                .restore_backup_with(file, *keep_erased, &move |done, total| {
                    b.set_length(total);
                    b.set_position(done);
                })
                .await
                .with_context(|| format!("restoring from {}", file.display()))?;
            bar.finish_and_clear();
            if out.json {
                super::emit_json(&serde_json::json!({"restored": info, "index": sync, "erasures": erasures}))?;
            } else {
                out!("restored from {}: {}", file.display(), describe(&info));
                match &sync.rebuilt_because {
                    Some(why) => {
                        out!("index rebuilt from the restored store ({why}): {} memories indexed", sync.upserted)
                    }
                    None => out!("index brought up to the restored store: {} memories indexed", sync.upserted),
                }
                let said = erasures.render();
                if !said.is_empty() {
                    out!("{}", said.trim_end());
                }
            }
        }
    }
    Ok(())
}
