//! `skill-factory man [-o DIR]`: the man page, generated from the flag definitions; printed,
//! or written as one page per command into a folder (`skill-factory.1`,
//! `skill-factory-optimize.1`, `skill-factory-lab-ask.1`, ...). `--markdown` prints the same
//! as the reference page `docs/reference.md`, with the environment variables of
//! `.env.example`, so that the page cannot drift from the binary.

use std::process::ExitCode;

use clap::CommandFactory;
use skill_factory_io::output::write_atomic;
use skill_factory_io::replace::{Outputs, Recognize};

use super::config_keys;
use crate::cli::{Cli, ManArgs};
use crate::output::{out, outln};

/// A page this command wrote earlier is replaced when the pages are written again; any other
/// file of that name is left alone (the command has no `--force`).
struct ManPage;

impl Recognize for ManPage {
    fn recognizes(&self, bytes: &[u8]) -> bool {
        bytes.starts_with(PAGE_START)
    }

    fn describe(&self) -> &str {
        "a man page written by skill-factory man"
    }
}

/// How every page clap_mangen renders begins (roff's definition of the apostrophe string).
const PAGE_START: &[u8] = b".ie \\n(.g .ds Aq";

/// Runs the command.
pub fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    // `help` is a page of its own nowhere: every page documents its own flags.
    let mut command = Cli::command().disable_help_subcommand(true);
    if args.markdown {
        out!("{}", reference(&command));
        return Ok(ExitCode::SUCCESS);
    }
    // Built, every subcommand knows its full name (`skill-factory-lab-ask`), which names its
    // page and the references between pages.
    command.build();
    match args.out {
        None => {
            out!("{}", render(&command)?);
        }
        Some(dir) => {
            let outputs = Outputs::without_force(
                "Move it away, or write the pages into another folder with -o",
            );
            outputs.check_folder("-o", &dir)?;
            let mut pages = Vec::new();
            collect(&command, &mut pages)?;
            for (name, _) in &pages {
                outputs.check("-o", &dir.join(name), ManPage)?;
            }
            for (name, text) in &pages {
                let path = dir.join(name);
                write_atomic(&path, text.as_bytes())
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            }
            outln!("Wrote {} man pages into {}.", pages.len(), dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The environment variables skill-factory reads, as `.env.example` lists them for users.
const ENV_EXAMPLE: &str = include_str!("../../../../.env.example");

/// The reference page: every command and flag, then every environment variable.
fn reference(command: &clap::Command) -> String {
    let options = clap_markdown::MarkdownOptions::new()
        .title("Reference".to_owned())
        .show_footer(false);
    let mut page = escaped(&clap_markdown::help_markdown_command_custom(
        command, &options,
    ));
    page.push_str(&escaped(&config_sections()));
    page.push_str(
        "\n## Environment variables\n\nRead from the environment, else from a `.env` file beside the config or in the working directory; a key or a URL in a provider block wins over both. `.env.example` holds the same list to copy.\n\n| variable | what it is |\n| :--- | :--- |\n",
    );
    for (name, about) in variables(ENV_EXAMPLE) {
        page.push_str(&format!("| `{name}` | {} |\n", about.replace('|', "\\|")));
    }
    page
}

/// Every key of both kinds of config file, from the schemas of the structs that read them.
fn config_sections() -> String {
    let skill = skill_factory::config::config_schema();
    let classifier = skill_factory_lab::config::config_schema();
    format!(
        "\n## Config file of a skill or trigger run\n\nThe keys of `config.yaml` for `optimize`, `evaluate` and `validate` (`kind: skill`, the default, or `kind: trigger`), block by block. A key the table does not list is an error that names it and the closest valid key.\n{}\n## Config file of classifier mode\n\nThe keys of a `kind: classifier` config, for `skill-factory lab`.\n{}",
        config_keys::markdown(skill.as_value(), None),
        config_keys::markdown(classifier.as_value(), Some("classifier")),
    )
}

/// Markdown whose help texts' placeholders (`runs/<name>`) are text, not HTML tags that a
/// renderer would hide: `<` and `>` outside code spans and fences escaped.
fn escaped(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || line.trim_start().starts_with("```") {
            out.push_str(line);
        } else {
            // Between backticks is code: the odd pieces of a split on them.
            for (i, piece) in line.split('`').enumerate() {
                if i > 0 {
                    out.push('`');
                }
                if i % 2 == 1 {
                    out.push_str(piece);
                } else {
                    out.push_str(&piece.replace('<', "&lt;").replace('>', "&gt;"));
                }
            }
        }
        out.push('\n');
    }
    out
}

/// Each `NAME=` line of an `.env` example with the comment lines right above it.
fn variables(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut about: Vec<&str> = Vec::new();
    // Variables on consecutive lines share the comment above the first.
    let mut after_variable = false;
    for line in text.lines() {
        let line = line.trim();
        if let Some(comment) = line.strip_prefix('#') {
            if after_variable {
                about.clear();
                after_variable = false;
            }
            let comment = comment.trim();
            // A section's rule (`--- Model providers ---`) is not about one variable.
            if !comment.starts_with("---") {
                about.push(comment);
            }
        } else if let Some((name, _)) = line.split_once('=') {
            found.push((name.trim().to_owned(), about.join(" ")));
            after_variable = true;
        } else {
            about.clear();
            after_variable = false;
        }
    }
    found
}

/// The page of `command` (its options and its subcommands' names).
fn render(command: &clap::Command) -> anyhow::Result<String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    Ok(String::from_utf8(page)?)
}

/// The file name and page of `command` and of each of its subcommands, at every depth.
fn collect(command: &clap::Command, pages: &mut Vec<(String, String)>) -> anyhow::Result<()> {
    let man = clap_mangen::Man::new(command.clone());
    pages.push((man.get_filename(), render(command)?));
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, pages)?;
    }
    Ok(())
}
