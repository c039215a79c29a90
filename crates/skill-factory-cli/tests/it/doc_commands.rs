//! Every command the README and the guide show in a shell block runs here, and prints what the
//! page shows after it, so the docs cannot drift from the binary. The guide's chapters are read
//! in the order `docs/SUMMARY.md` lists them, as one page: a chapter finds what an earlier one
//! wrote.
//!
//! A command line of a ```` ```bash ````, ```` ```sh ```` or ```` ```console ```` block that runs
//! `skill-factory` (or `cargo run ... -p skill-factory-cli -- `, the same binary) is one of two
//! kinds:
//!
//! - it runs here: in a copy of the repository's `examples/` and `gallery/`, its relative paths
//!   intact, with the binary under test, in the order the page gives them (so `validate` finds
//!   what `export` wrote), and exits 0 or with the code its comment names (`# exit 2`). When the
//!   next block of its section is a ```` ```text ```` or untagged block, that block is its
//!   standard output, compared line by line; what differs from run to run is normalized on both
//!   sides by [`normalized`]. A comment such as `# 0.544 → 1.000` names figures the command prints.
//!   [`SETUPS`] gives the few commands that read what the repository does not hold under the name
//!   the page uses (the reader's own skill, a run made earlier);
//! - or it needs what CI cannot have (a hosted provider's key, a model server, the internet, a
//!   terminal) and matches an entry of [`CANNOT_RUN`], which says why.
//!
//! A command of neither kind fails the test, saying to make it run or to table it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fancy_regex::Regex;
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use crate::common;
use crate::docs_links::guide_chapters;

/// The guide's chapters, relative to the repository's root, in reading order.
fn guide() -> Vec<String> {
    guide_chapters(&common::repo_root())
        .iter()
        .map(|chapter| chapter.display().to_string())
        .collect()
}

/// The pages whose shell blocks run: the README, then the guide's chapters.
fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_owned()];
    pages.extend(guide());
    pages
}

/// Commands the pages show that need what CI cannot have, by the start of the command (its
/// words after `skill-factory`, as the page writes them), with the reason.
const CANNOT_RUN: &[(&str, &str)] = &[
    (
        "optimize -c examples/invoice-extractor/config.yaml",
        "the example's hosted models need ANTHROPIC_API_KEY; its config.offline.yaml, which the \
         README runs, is the same run with scripted models",
    ),
    (
        "models fetch",
        "downloads the model from PyPI, and no test reaches the internet (the end-to-end stage \
         of .ci/run fetches it)",
    ),
    (
        "ui --runs",
        "serves the dashboard until it is stopped; tests/it/ui.rs and ui_browser.rs test the \
         server",
    ),
];

/// A command that reads what the repository does not hold under the name the page gives it,
/// or runs in another folder than the copy's root.
struct Setup {
    /// The start of the command, as in [`CANNOT_RUN`].
    command: &'static str,
    /// What the page means, and what stands for it here.
    why: &'static str,
    /// Makes what the command reads (once: a later command finds it there) and returns the
    /// folder the command runs in.
    prepare: fn(&Sandbox) -> PathBuf,
}

const SETUPS: &[Setup] = &[
    Setup {
        command: "init SKILL.md",
        why: "run in the folder of a SKILL.md: the receipt-total example's seed, the skill the \
              guide's output names",
        prepare: skill_folder,
    },
    Setup {
        command: "optimize --record -c my-skill/config.yaml",
        why: "my-skill/ is the reader's own skill: the offline invoice example, with the test \
              split a gallery entry wants and its runs where a config.yaml puts them",
        prepare: |sandbox| {
            my_skill(sandbox);
            sandbox.root()
        },
    },
    Setup {
        command: "evaluate -c config.yaml",
        why: "config.yaml is the reader's config: my-skill's (above), run in its folder",
        prepare: my_skill,
    },
    Setup {
        command: "ui export runs/ticket-classifier/latest",
        why: "a run of the ticket classifier under runs/: its offline config, run there first",
        prepare: classifier_run,
    },
];

/// A block of output that shows another command than the one it follows, as the page's text
/// says; that command runs in its place.
struct OutputOf {
    /// The start of the command the block follows.
    after: &'static str,
    /// What the page says the block shows.
    why: &'static str,
    /// The file the command reads, written first: its path and contents.
    file: (&'static str, &'static str),
    /// The command's words after `skill-factory`.
    args: &'static [&'static str],
    /// Its exit code.
    exit: i32,
}

const OUTPUT_OF: &[OutputOf] = &[OutputOf {
    after: "validate dist/invoice-extractor",
    why: "the guide shows the findings for a file bad.md with `name: bad--name`",
    file: (
        "bad.md",
        "---\nname: bad--name\ndescription: Reads the total of a receipt.\n---\n\nSay the total.\n",
    ),
    args: &["validate", "bad.md"],
    exit: 2,
}];

/// A fenced block of a page.
pub(crate) struct Block {
    /// The first word of its info string (`bash`, `text`; empty when untagged).
    pub(crate) language: String,
    pub(crate) body: String,
    /// The line of its opening fence.
    pub(crate) line: usize,
    /// How many headings come before it: a block's output is the next block of its section.
    section: usize,
}

/// The fenced blocks of a Markdown page, in order.
pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut section = 0;
    let mut open: Option<Block> = None;
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => section += 1,
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                open = Some(Block {
                    language: info.split_whitespace().next().unwrap_or("").to_owned(),
                    body: String::new(),
                    line: text[..range.start].matches('\n').count() + 1,
                    section,
                });
            }
            Event::Text(t) => {
                if let Some(block) = open.as_mut() {
                    block.body.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
            _ => {}
        }
    }
    blocks
}

/// A command line of a shell block that runs `skill-factory`.
struct Shown {
    /// The page (a chapter of the guide, or the README) that shows it.
    page: String,
    /// Its line in the page.
    line: usize,
    /// As the page writes it.
    text: String,
    /// `NAME=value` words before the program.
    env: Vec<(String, String)>,
    /// The words after `skill-factory`.
    args: Vec<String>,
    /// Where `>` (or `>>`) sends its standard output.
    redirect: Option<String>,
    /// The exit code its comment names, else 0.
    exit: i32,
    /// The comment after it, if any.
    comment: String,
    /// The output the page shows for it.
    output: Option<String>,
}

impl Shown {
    /// Its words after `skill-factory`, joined by single spaces: what the tables match.
    fn key(&self) -> String {
        self.args.join(" ")
    }

    fn matches(&self, start: &str) -> bool {
        let key = self.key();
        key == start || key.starts_with(&format!("{start} "))
    }

    fn at(&self) -> String {
        format!("{}:{}: `{}`", self.page, self.line, self.text.trim())
    }
}

/// A shell line's comment: what follows the first `#` that starts a word outside quotes.
fn comment_of(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return line[at + 1..].trim(),
            None => {}
        }
        previous = c;
    }
    ""
}

/// The words after the program when a command runs `skill-factory`: the binary itself (by
/// name or path), or `cargo run` of the CLI's package or binary, after its `--`.
fn skill_factory_args(words: &[String]) -> Option<&[String]> {
    let program = words.first()?;
    if program == "skill-factory" || program.ends_with("/skill-factory") {
        return Some(&words[1..]);
    }
    if program != "cargo" || words.get(1).is_none_or(|w| w != "run") {
        return None;
    }
    let split = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let cargo = &words[2..split];
    let ours = cargo.windows(2).any(|pair| {
        matches!(pair[0].as_str(), "-p" | "--package") && pair[1] == "skill-factory-cli"
            || pair[0] == "--bin" && pair[1] == "skill-factory"
    }) || cargo
        .iter()
        .any(|w| w == "--package=skill-factory-cli" || w == "--bin=skill-factory");
    ours.then(|| words.get(split + 1..).unwrap_or(&[]))
}

/// The commands of one shell line, or why the test cannot read it.
fn parse_line(page: &str, line: usize, text: &str) -> Result<Option<Shown>, String> {
    let words = shlex::split(text).ok_or_else(|| format!("{page}:{line}: unbalanced quotes"))?;
    let assignments = words
        .iter()
        .take_while(|w| {
            w.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !name.starts_with(|c: char| c.is_ascii_digit())
            })
        })
        .count();
    let Some(rest) = skill_factory_args(&words[assignments..]) else {
        return Ok(None);
    };
    let env = words[..assignments]
        .iter()
        .map(|w| {
            let (name, value) = w.split_once('=').unwrap();
            (name.to_owned(), value.to_owned())
        })
        .collect();
    let mut args = Vec::new();
    let mut redirect = None;
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            ">" | ">>" => {
                redirect = Some(
                    words
                        .next()
                        .ok_or_else(|| format!("{page}:{line}: `{word}` without a file"))?
                        .clone(),
                );
            }
            "|" | "||" | "&&" | ";" | "&" | "<" | "2>" | "2>&1" | "&>" => {
                return Err(format!(
                    "{page}:{line}: `{}` uses the shell operator `{word}`, which this test does \
                     not run: show the command alone",
                    text.trim()
                ));
            }
            _ => args.push(word.clone()),
        }
    }
    let comment = comment_of(text).to_owned();
    let exit = Regex::new(r"\bexit (\d+)\b")
        .unwrap()
        .captures(&comment)
        .unwrap()
        .map_or(0, |c| c.get(1).unwrap().as_str().parse().unwrap());
    Ok(Some(Shown {
        page: page.to_owned(),
        line,
        text: text.to_owned(),
        env,
        args,
        redirect,
        exit,
        comment,
        output: None,
    }))
}

/// The `skill-factory` commands of a page's shell blocks, each with the output the page shows
/// for it.
fn shown(page: &str) -> Result<Vec<Shown>, String> {
    let text = std::fs::read_to_string(common::repo_root().join(page)).unwrap();
    let blocks = blocks(&text);
    let mut commands = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        if !matches!(block.language.as_str(), "bash" | "sh" | "console") {
            continue;
        }
        let console = block.language == "console";
        let first = commands.len();
        let mut lines = block.body.lines().enumerate().peekable();
        while let Some((offset, line)) = lines.next() {
            let mut text = line.to_owned();
            if console {
                // A console block: `$ ` starts a command, and the lines up to the next one
                // are its output.
                let Some(command) = text.strip_prefix("$ ") else {
                    continue;
                };
                text = command.to_owned();
            }
            while text.ends_with('\\') {
                text.pop();
                match lines.next() {
                    Some((_, next)) => text.push_str(next),
                    None => break,
                }
            }
            let mut found = parse_line(page, block.line + 1 + offset, &text)?;
            if console {
                let mut output = Vec::new();
                while let Some((_, next)) = lines.next_if(|(_, l)| !l.starts_with("$ ")) {
                    output.push(next);
                }
                if let Some(found) = found.as_mut() {
                    found.output = Some(output.join("\n"));
                }
            }
            commands.extend(found);
        }
        // The next block of the same section, untagged or `text`, is the output of the
        // block's one command.
        let ours = &mut commands[first..];
        if let Some(next) = blocks.get(index + 1)
            && next.section == block.section
            && matches!(next.language.as_str(), "" | "text")
            && !console
        {
            match ours {
                [] => {}
                [one] => one.output = Some(next.body.clone()),
                _ => {
                    return Err(format!(
                        "{page}:{}: the output at line {} follows a block of {} commands: give \
                         the command it shows a block of its own",
                        block.line,
                        next.line,
                        ours.len()
                    ));
                }
            }
        }
    }
    Ok(commands)
}

/// A copy of what the commands read, and a home folder of its own: `install --global` and a
/// `~/` the page writes to land there, not in the home of whoever runs the tests.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let repo = common::repo_root();
        for folder in ["examples", "gallery"] {
            copy_tracked(&repo.join(folder), &dir.path().join(folder));
        }
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Sandbox { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `skill-factory` run in `cwd` under the environment every command gets here.
    fn command(&self, cwd: &Path) -> assert_cmd::Command {
        let mut command = common::bin();
        command.current_dir(cwd).env("HOME", self.home());
        // Nothing a command does may reach the internet: a proxy that refuses every
        // connection, and pip (of `models fetch`) kept off its index.
        for proxy in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
            command.env(proxy, "http://127.0.0.1:9");
            command.env(proxy.to_lowercase(), "http://127.0.0.1:9");
        }
        command.env("PIP_NO_INDEX", "1");
        // A command that waits on something that never comes fails instead of hanging the
        // tests.
        command.timeout(Duration::from_secs(300));
        command
    }
}

/// Copies a folder of the repository as a clone has it: without what runs leave in it (run
/// folders, exports, caches, keys), which would change what a command prints.
fn copy_tracked(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if [".skill-factory", "runs", "dist", ".env", "models"]
            .iter()
            .any(|ignored| name == *ignored)
        {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_tracked(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `receipt-total/SKILL.md`, the receipt-total example's seed skill; returns its folder.
fn skill_folder(sandbox: &Sandbox) -> PathBuf {
    let folder = sandbox.root().join("receipt-total");
    if !folder.is_dir() {
        std::fs::create_dir(&folder).unwrap();
        std::fs::copy(
            sandbox.root().join("examples/receipt-total/seed_skill.md"),
            folder.join("SKILL.md"),
        )
        .unwrap();
    }
    folder
}

/// `my-skill/`, a skill of the reader's with a `config.yaml`: the offline invoice example with
/// a test split and no `output.dir` (its runs go to `my-skill/runs/my-skill/`); returns it.
fn my_skill(sandbox: &Sandbox) -> PathBuf {
    let folder = sandbox.root().join("my-skill");
    if folder.is_dir() {
        return folder;
    }
    copy_tracked(&sandbox.root().join("examples/invoice-extractor"), &folder);
    let offline = std::fs::read_to_string(folder.join("config.offline.yaml")).unwrap();
    let split = "val_fraction: 0.34\n";
    let output = offline
        .find("\noutput:\n")
        .expect("the example's output block");
    assert!(offline.contains(split), "{offline}");
    std::fs::write(
        folder.join("config.yaml"),
        offline[..output + 1].replace(split, &format!("{split}test_fraction: 0.25\n")),
    )
    .unwrap();
    folder
}

/// `runs/ticket-classifier/latest`, a run of the offline ticket classifier; returns the root.
fn classifier_run(sandbox: &Sandbox) -> PathBuf {
    let root = sandbox.root();
    if !root.join("runs/ticket-classifier/latest").exists() {
        let ran = common::run(sandbox.command(&root).args([
            "optimize",
            "-c",
            "examples/ticket-classifier/config.offline.yaml",
            "-o",
            "runs/ticket-classifier",
        ]));
        assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    }
    root
}

/// What differs from run to run, replaced on both sides before the shown output is compared:
/// only these.
fn normalized(text: &str) -> String {
    let rules = [
        // The time a run took: the report's `Wall time: 0.2 s.`.
        (r"Wall time: \d+(\.\d+)? s\.", "Wall time: <seconds> s."),
        // A run's folder is named after the time it started: `20261129-172216`.
        (r"\b\d{8}-\d{6}\b", "<run started>"),
    ];
    let mut text = text.to_owned();
    for (pattern, replacement) in rules {
        text = Regex::new(pattern)
            .unwrap()
            .replace_all(&text, replacement)
            .into_owned();
    }
    text
}

/// The first difference between the output a page shows and what the command printed, if any.
fn differs(shown: &str, printed: &str) -> Option<String> {
    let lines = |text: &str| -> Vec<String> {
        let mut lines: Vec<String> = normalized(text)
            .lines()
            .map(|l| l.trim_end().to_owned())
            .collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        lines
    };
    let (shown, printed) = (lines(shown), lines(printed));
    let at = (0..shown.len().max(printed.len())).find(|&i| shown.get(i) != printed.get(i))?;
    let line = |lines: &[String]| lines.get(at).cloned().unwrap_or_else(|| "(none)".into());
    Some(format!(
        "its shown output differs at its line {}:\n  shown:   {}\n  printed: {}\nall it printed:\n{}",
        at + 1,
        line(&shown),
        line(&printed),
        printed.join("\n")
    ))
}

/// The scores a comment names as `before → after` (`# held-out accuracy 0.562 → 1.000`): each
/// must be among what the command printed.
fn claimed_scores(comment: &str) -> Vec<String> {
    Regex::new(r"(\d+\.\d+) → (\d+\.\d+)")
        .unwrap()
        .captures_iter(comment)
        .flat_map(|c| {
            let c = c.unwrap();
            [1, 2].map(|i| c.get(i).unwrap().as_str().to_owned())
        })
        .collect()
}

/// Where a redirected command's output goes: a relative file in the folder it runs in, a `~/`
/// file in the sandbox's home (its folders made, as a reader's shell setup has them); `None`
/// for anything else (`$PROFILE`, PowerShell's profile), whose output is only checked.
fn redirected(sandbox: &Sandbox, cwd: &Path, target: &str) -> Option<PathBuf> {
    if let Some(in_home) = target.strip_prefix("~/") {
        return Some(sandbox.home().join(in_home));
    }
    (!target.starts_with(['/', '$', '~'])).then(|| cwd.join(target))
}

/// Runs one command the page shows; the problems found, if any.
fn run_shown(sandbox: &Sandbox, shown: &Shown) -> Vec<String> {
    let how = "Make it run here (give what it reads in SETUPS, or show an offline config) or, \
               when it needs what CI cannot have, add it to CANNOT_RUN with the reason.";
    let cwd = SETUPS
        .iter()
        .find(|setup| shown.matches(setup.command))
        .map_or_else(|| sandbox.root(), |setup| (setup.prepare)(sandbox));
    let mut command = sandbox.command(&cwd);
    command.args(&shown.args);
    for (name, value) in &shown.env {
        command.env(name, value);
    }
    let ran = common::run(&mut command);
    let mut problems = Vec::new();
    if ran.code != Some(shown.exit) {
        problems.push(format!(
            "{} exited {:?}, not {}:\n{}{}\n{how}",
            shown.at(),
            ran.code,
            shown.exit,
            ran.stdout,
            ran.stderr
        ));
        return problems;
    }
    if let Some(target) = &shown.redirect {
        if ran.stdout.is_empty() {
            problems.push(format!("{} wrote nothing to {target}", shown.at()));
        }
        if let Some(file) = redirected(sandbox, &cwd, target) {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            let mut text = if shown.text.contains(">>") {
                std::fs::read_to_string(&file).unwrap_or_default()
            } else {
                String::new()
            };
            text.push_str(&ran.stdout);
            std::fs::write(&file, text).unwrap();
        }
    }
    for score in claimed_scores(&shown.comment) {
        if !ran.stdout.contains(&score) && !ran.stderr.contains(&score) {
            problems.push(format!(
                "{}: its comment names {score}, which it did not print:\n{}{}",
                shown.at(),
                ran.stdout,
                ran.stderr
            ));
        }
    }
    if let Some(output) = &shown.output {
        let (printed, what) = match OUTPUT_OF.iter().find(|o| shown.matches(o.after)) {
            Some(other) => {
                let (path, contents) = other.file;
                std::fs::write(cwd.join(path), contents).unwrap();
                let ran = common::run(sandbox.command(&cwd).args(other.args));
                if ran.code != Some(other.exit) {
                    problems.push(format!(
                        "{}: `skill-factory {}`, whose output follows it, exited {:?}, not {}:\n{}",
                        shown.at(),
                        other.args.join(" "),
                        ran.code,
                        other.exit,
                        ran.stderr
                    ));
                }
                (
                    ran,
                    format!(" (the output of `skill-factory {}`)", other.args.join(" ")),
                )
            }
            None => (ran, String::new()),
        };
        if let Some(difference) = differs(output, &printed.stdout) {
            problems.push(format!("{}{what}: {difference}", shown.at()));
        }
    }
    problems
}

/// Runs every command of the pages in one sandbox, in order (the pages' order, then each
/// page's); how many ran, and the problems.
fn run_pages(pages: &[String]) -> (usize, Vec<String>) {
    let commands: Vec<Shown> = pages
        .iter()
        .flat_map(|page| shown(page).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let sandbox = Sandbox::new();
    let mut ran = 0;
    let mut problems = Vec::new();
    for shown in &commands {
        if CANNOT_RUN.iter().any(|(start, _)| shown.matches(start)) {
            continue;
        }
        ran += 1;
        problems.extend(run_shown(&sandbox, shown));
    }
    (ran, problems)
}

/// Runs the pages' commands in one sandbox; `what` names them in the messages.
fn assert_pages_run(what: &str, pages: &[String]) {
    let (ran, problems) = run_pages(pages);
    assert!(ran > 0, "{what}: no command ran");
    assert!(
        problems.is_empty(),
        "{what}: problems with {} of its commands:\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

#[test]
fn the_readmes_commands_run_and_print_what_it_shows() {
    assert_pages_run("README.md", &["README.md".to_owned()]);
}

#[test]
fn the_guides_commands_run_and_print_what_it_shows() {
    let chapters = guide();
    assert!(chapters.len() > 10, "docs/SUMMARY.md lists {chapters:?}");
    assert_pages_run("the guide (docs/guide/)", &chapters);
}

#[test]
fn every_table_entry_names_a_command_the_docs_show() {
    let commands: Vec<Shown> = pages()
        .iter()
        .flat_map(|page| shown(page).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    assert!(
        commands.len() > 20,
        "only {} commands found",
        commands.len()
    );
    let starts = CANNOT_RUN
        .iter()
        .map(|(start, why)| (*start, *why, "CANNOT_RUN"))
        .chain(SETUPS.iter().map(|s| (s.command, s.why, "SETUPS")))
        .chain(OUTPUT_OF.iter().map(|o| (o.after, o.why, "OUTPUT_OF")));
    for (start, why, table) in starts {
        assert!(!why.is_empty(), "{table}: {start} says no reason");
        assert!(
            commands.iter().any(|c| c.matches(start)),
            "{table}: no page shows a command `skill-factory {start}`: remove the entry"
        );
    }
    for command in &commands {
        let tabled = CANNOT_RUN.iter().any(|(start, _)| command.matches(start));
        let prepared = SETUPS.iter().any(|s| command.matches(s.command));
        assert!(
            !(tabled && prepared),
            "{} is both in CANNOT_RUN and in SETUPS",
            command.at()
        );
    }
    let tabled = commands
        .iter()
        .filter(|c| CANNOT_RUN.iter().any(|(start, _)| c.matches(start)))
        .count();
    eprintln!(
        "{} of the {} commands the README and the guide show run here",
        commands.len() - tabled,
        commands.len()
    );
}

#[test]
fn shell_lines_are_read_as_a_shell_reads_them() {
    let line = |text: &str| parse_line("page", 1, text).unwrap();
    let shown = line("SKILL_FACTORY_REPLAY=bug.jsonl skill-factory evaluate -c 'my config.yaml'   # reproduce, exit 3").unwrap();
    assert_eq!(
        shown.env,
        [("SKILL_FACTORY_REPLAY".into(), "bug.jsonl".into())]
    );
    assert_eq!(shown.args, ["evaluate", "-c", "my config.yaml"]);
    assert_eq!(shown.exit, 3);
    let shown =
        line("cargo run --release -p skill-factory-cli -- optimize -c x.yaml # 0.544 → 1.000")
            .unwrap();
    assert_eq!(shown.key(), "optimize -c x.yaml");
    assert_eq!(claimed_scores(&shown.comment), ["0.544", "1.000"]);
    let shown = line("skill-factory completions zsh > ~/.zfunc/_skill-factory").unwrap();
    assert_eq!(shown.redirect.as_deref(), Some("~/.zfunc/_skill-factory"));
    assert_eq!(shown.key(), "completions zsh");
    assert!(line("cargo run -p other -- optimize").is_none());
    assert!(line("man -l man/man1/skill-factory-init.1").is_none());
    assert!(parse_line("page", 1, "skill-factory list | head -1").is_err());
    assert_eq!(comment_of("a '#not' b # yes"), "yes");
}

#[test]
fn only_times_and_run_folders_may_differ() {
    assert_eq!(
        differs(
            "Wall time: 0.0 s.\nArtifacts: runs/x/20261129-172216\n",
            "Wall time: 12.5 s.\nArtifacts: runs/x/20261207-031010"
        ),
        None
    );
    assert!(differs("Score: 0.475 over 16 tasks", "Score: 0.476 over 16 tasks").is_some());
    assert!(differs("a\nb", "a").is_some());
}
