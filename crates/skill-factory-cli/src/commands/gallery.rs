//! `skill-factory gallery add RUN_DIR | index [--gallery DIR]`: gallery entries written from
//! finished runs, and the gallery's index.

use std::process::ExitCode;

use skill_factory::gallery::index::write_index;
use skill_factory::gallery::{AddOptions, add_entry};

use crate::cli::{GalleryAction, GalleryArgs};
use crate::output::{errln, outln};

/// Runs the command.
pub fn run(args: GalleryArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        GalleryAction::Add { run_dir, name } => {
            let added = add_entry(
                &run_dir,
                &AddOptions {
                    gallery_dir: args.gallery,
                    name,
                },
            )?;
            for warning in added.warnings() {
                errln!("{warning}");
            }
            let facts = &added.facts;
            outln!(
                "Gallery entry {} → {} (run {}, {} candidate files)",
                added.name,
                added.dir.display(),
                facts.run.run_id,
                added.candidates
            );
            outln!("Skill → {}", added.skill.skill_md.display());
            let test = match &facts.run.test {
                Some(test) => match (test.seed_score, test.best_score) {
                    (Some(seed), Some(best)) => format!("; test {seed:.3} → {best:.3}"),
                    _ => "; test not scored".to_owned(),
                },
                None => String::new(),
            };
            outln!(
                "Baseline {:.3} → best {:.3} (validation){test}",
                facts.baseline_score,
                facts.best_score
            );
            outln!(
                "Index → {} ({} entr{})",
                added.index.path.display(),
                added.index.entries,
                if added.index.entries == 1 { "y" } else { "ies" }
            );
        }
        GalleryAction::Index => {
            let index = write_index(&args.gallery)?;
            outln!(
                "Index → {} ({} entr{})",
                index.path.display(),
                index.entries,
                if index.entries == 1 { "y" } else { "ies" }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
