//! `export`, `validate` and `install` as a user runs them: the Agent Skills layout on disk,
//! the messages, the exit codes, and the agents' folders (project and `--global`).

use std::path::{Path, PathBuf};

use assert_cmd::assert::Assert;
use predicates::prelude::*;

use crate::common::{bin, repo_root};

fn example_skill() -> PathBuf {
    repo_root().join("examples/invoice-extractor/seed_skill.md")
}

fn fixture_skill() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf-form-notes")
}

/// Every file of the fixture skill: its body and one of each kind of bundled file.
const FIXTURE_FILES: [&str; 4] = [
    "SKILL.md",
    "references/fields.md",
    "scripts/check.sh",
    "assets/template.txt",
];

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// `text` written to `name` (a path relative to the folder) in a new temporary folder: the
/// folder, which lives as long as the handle, and the file's path.
fn temp_skill(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    write(&path, text);
    (dir, path)
}

/// `export [flags] --skill <skill> -o <out>`, run to its end.
fn export(flags: &[&str], skill: &Path, out: &Path) -> Assert {
    bin()
        .arg("export")
        .args(flags)
        .arg("--skill")
        .arg(skill)
        .arg("-o")
        .arg(out)
        .assert()
}

/// `validate <path>`, run to its end.
fn validate(path: &Path) -> Assert {
    bin().arg("validate").arg(path).assert()
}

/// Asserts that the command's stdout holds each of `says`.
fn stdout_holds(mut assert: Assert, says: &[&str]) -> Assert {
    for said in says {
        assert = assert.stdout(predicate::str::contains(*said));
    }
    assert
}

/// Asserts that the command's stderr holds each of `says`.
fn stderr_holds(mut assert: Assert, says: &[&str]) -> Assert {
    for said in says {
        assert = assert.stderr(predicate::str::contains(*said));
    }
    assert
}

#[test]
fn export_writes_the_skill_folder_and_prints_the_install_hint() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("dist");
    let skill_dir = dir.join("invoice-extractor");
    export(&[], &example_skill(), &dir)
        .success()
        .stdout(format!(
            "Emitted skill → {}\nInstall into an agent with:\n  npx skills add {}\nor copy the \
             folder into ~/.claude/skills, ~/.codex/skills, etc.\n",
            skill_dir.join("SKILL.md").display(),
            skill_dir.display()
        ));
    assert!(read(&skill_dir.join("SKILL.md")).starts_with("---\nname: invoice-extractor\n"));
    validate(&skill_dir)
        .success()
        .stdout(predicate::str::contains("SKILL.md: ok"));
}

#[test]
fn collection_export_goes_under_skills() {
    let out = tempfile::tempdir().unwrap();
    export(&["--collection"], &example_skill(), out.path()).success();
    assert!(
        out.path()
            .join("skills/invoice-extractor/SKILL.md")
            .is_file()
    );
    validate(out.path())
        .success()
        .stdout(predicate::str::contains("Checked 1 skill: 0 errors"));
}

#[test]
fn export_carries_references_scripts_and_assets_byte_for_byte() {
    let out = tempfile::tempdir().unwrap();
    export(&[], &fixture_skill().join("SKILL.md"), out.path())
        .success()
        .stderr("");
    let exported = out.path().join("pdf-form-notes");
    for file in FIXTURE_FILES {
        assert_eq!(
            read(&exported.join(file)),
            read(&fixture_skill().join(file)),
            "{file}"
        );
    }
}

#[test]
fn invalid_name_is_exported_as_its_slug_with_a_warning_line() {
    let (dir, source) = temp_skill(
        "skill.md",
        "---\nname: My Skill!\ndescription: Does it.\n---\n\nBody.\n",
    );
    export(&[], &source, &dir.path().join("out"))
        .success()
        .stderr(predicate::str::contains(
            "warning [name-slugged]: The name \"My Skill!\" is not a valid Agent Skills name; \
             exported as \"my-skill\"",
        ));
    let exported = read(&dir.path().join("out/my-skill/SKILL.md"));
    assert!(exported.starts_with("---\nname: my-skill\n"), "{exported}");
}

#[test]
fn a_python_tool_skill_with_version_and_author_exports_them_under_metadata_and_validates() {
    let (dir, source) = temp_skill(
        "skill.md",
        "---\nname: my-skill\ndescription: Does it.\nversion: 0.2\nauthor: Ada\n---\n\nBody.\n",
    );
    // validate says what is wrong and that export repairs it.
    stdout_holds(
        validate(&source).code(2),
        &[
            "error [unknown-key]: 'version'",
            "`skill-factory export` moves it there for you",
        ],
    );
    let out = dir.path().join("dist");
    export(&[], &source, &out)
        .success()
        .stderr(predicate::str::contains(
            "warning [moved-to-metadata]: version, author are not Agent Skills frontmatter keys",
        ));
    let exported = out.join("my-skill");
    assert_eq!(
        read(&exported.join("SKILL.md")),
        "---\nname: my-skill\ndescription: Does it.\nmetadata:\n  version: '0.2'\n  author: Ada\n---\n\nBody.\n"
    );
    validate(&exported)
        .success()
        .stdout(predicate::str::contains("SKILL.md: ok"));
}

#[test]
fn export_without_description_exits_2_and_writes_nothing() {
    let (dir, source) = temp_skill("skill.md", "---\nname: my-skill\n---\n\nBody.\n");
    stderr_holds(
        export(&[], &source, &dir.path().join("out")).code(2),
        &[
            "nothing was written",
            "error [description-required]",
            "Fix: Add `description:",
        ],
    );
    assert!(!dir.path().join("out").exists());
}

#[cfg(unix)]
#[test]
fn export_never_follows_a_symlink_out_of_the_skill_folder() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("secret.txt"), "secret");
    write(
        &dir.path().join("my-skill/SKILL.md"),
        "---\nname: my-skill\ndescription: d\n---\n\nBody.\n",
    );
    std::os::unix::fs::symlink(
        dir.path().join("secret.txt"),
        dir.path().join("my-skill/leak.txt"),
    )
    .unwrap();
    export(&[], &dir.path().join("my-skill"), &dir.path().join("out"))
        .success()
        .stderr(predicate::str::contains(
            "warning [symlink]: leak.txt is a symbolic link; it is not carried along.",
        ));
    assert!(!dir.path().join("out/my-skill/leak.txt").exists());
}

#[test]
fn validate_reports_bad_name_missing_description_and_folder_mismatch() {
    let (dir, _) = temp_skill("bad/SKILL.md", "---\nname: Bad--Name\n---\n\nBody.\n");
    stdout_holds(
        validate(&dir.path().join("bad")).code(2),
        &[
            "error [name-characters]",
            "error [name-hyphens]",
            "error [description-required]",
            "error [name-matches-folder]",
            "Fix: Write `name: bad-name`",
            "Checked 1 skill: 4 errors, 0 warnings.",
        ],
    );
}

#[test]
fn validate_refuses_a_skill_whose_description_or_body_holds_escape_sequences() {
    let (_dir, file) = temp_skill(
        "my-skill/SKILL.md",
        "---\nname: my-skill\ndescription: \"Does a thing\\e]0;owned\\a.\"\n---\n\nSee \u{1b}]8;;https://evil.example\u{7}here\u{1b}]8;;\u{7}.\n",
    );
    let says = [
        "error [control-characters]",
        "The description holds",
        "The body holds",
    ];
    stdout_holds(validate(&file).code(2), &says).stdout(predicate::str::contains('\u{1b}').not());
}

#[test]
fn validate_passes_with_warnings_only() {
    let (_dir, file) = temp_skill(
        "skill.md",
        "---\nname: my-skill\ndescription: d\nmodel: opus\n---\n\nBody.\n",
    );
    let says = ["warning [agent-specific-key]", "0 errors, 1 warning."];
    stdout_holds(validate(&file).success(), &says);
}

#[test]
fn validate_of_a_collection_checks_every_skill_and_fails_on_one_bad() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("skills/good/SKILL.md"),
        "---\nname: good\ndescription: d\n---\n\nBody.\n",
    );
    write(
        &dir.path().join("skills/bad/SKILL.md"),
        "---\nname: bad\ndescription: d\nversion: 2\n---\n\nBody.\n",
    );
    stdout_holds(
        validate(dir.path()).code(2),
        &[
            "error [unknown-key]: 'version'",
            "good/SKILL.md: ok",
            "Checked 2 skills: 1 error, 0 warnings.",
        ],
    );
}

#[test]
fn validate_of_a_missing_path_exits_2() {
    bin()
        .args(["validate", "/nonexistent/skill"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such file or folder"));
}

#[test]
fn install_for_three_agents_writes_their_project_folders() {
    let project = tempfile::tempdir().unwrap();
    let installing = bin()
        .current_dir(project.path())
        .args(["install", "--skill"])
        .arg(fixture_skill())
        .args(["--agent", "claude-code", "--agent", "cursor,windsurf"])
        .assert();
    stdout_holds(
        installing.success(),
        &[
            "Installed pdf-form-notes for claude-code → ./.claude/skills/pdf-form-notes",
            "Installed pdf-form-notes for cursor → ./.cursor/skills/pdf-form-notes",
            "Installed pdf-form-notes for windsurf → ./.windsurf/skills/pdf-form-notes",
        ],
    );
    for dir in [".claude/skills", ".cursor/skills", ".windsurf/skills"] {
        let installed = project.path().join(dir).join("pdf-form-notes");
        assert_eq!(
            read(&installed.join("SKILL.md")),
            read(&fixture_skill().join("SKILL.md")),
            "{dir}"
        );
        assert!(installed.join("references/fields.md").is_file(), "{dir}");
    }
}

#[test]
fn install_into_a_named_project_shares_the_agents_folder() {
    let project = tempfile::tempdir().unwrap();
    bin()
        .args(["install", "--skill"])
        .arg(example_skill())
        .args([
            "-a",
            "codex",
            "-a",
            "gemini-cli",
            "-a",
            "copilot",
            "--project",
        ])
        .arg(project.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "for codex, gemini-cli, github-copilot →",
        ));
    assert!(
        project
            .path()
            .join(".agents/skills/invoice-extractor/SKILL.md")
            .is_file()
    );
}

#[test]
fn global_install_uses_the_home_folders() {
    let home = tempfile::tempdir().unwrap();
    bin()
        .env("HOME", home.path())
        .args(["install", "--global", "--skill"])
        .arg(example_skill())
        .args(["-a", "claude-code,codex,opencode"])
        .assert()
        .success();
    for dir in [".claude/skills", ".codex/skills", ".config/opencode/skills"] {
        assert!(
            home.path()
                .join(dir)
                .join("invoice-extractor/SKILL.md")
                .is_file(),
            "{dir}"
        );
    }
}

#[test]
fn install_refuses_a_different_skill_without_force_and_replaces_it_with_force() {
    let home = tempfile::tempdir().unwrap();
    let install = |skill: &Path, force: bool| {
        let mut command = bin();
        command
            .env("HOME", home.path())
            .args(["install", "--global", "-a", "claude-code", "--skill"])
            .arg(skill);
        if force {
            command.arg("--force");
        }
        command.assert()
    };
    install(&example_skill(), false).success();
    install(&example_skill(), false)
        .success()
        .stdout(predicate::str::contains(
            "invoice-extractor is already installed for claude-code",
        ));

    let changed = home.path().join("changed.md");
    write(
        &changed,
        &read(&example_skill()).replace("# Invoice extractor", "# Changed"),
    );
    let installed = home
        .path()
        .join(".claude/skills/invoice-extractor/SKILL.md");
    stderr_holds(
        install(&changed, false).code(2),
        &[
            "a different skill named \"invoice-extractor\" is already installed",
            "Pass --force to replace it",
        ],
    );
    assert!(!read(&installed).contains("# Changed"));

    install(&changed, true)
        .success()
        .stdout(predicate::str::contains(
            "Replaced the existing invoice-extractor for claude-code",
        ));
    assert!(read(&installed).contains("# Changed"));
}

#[test]
fn install_of_an_unknown_agent_suggests_the_closest() {
    let installing = bin()
        .args(["install", "--skill"])
        .arg(example_skill())
        .args(["-a", "cursr"])
        .assert();
    let says = ["unknown agent \"cursr\"", "Did you mean \"cursor\"?"];
    stderr_holds(installing.code(2), &says);
}

#[test]
fn list_agents_shows_project_and_global_folders() {
    let listed = bin().args(["install", "--list-agents"]).assert().success();
    stdout_holds(
        listed,
        &[
            "claude-code (claude)",
            "~/.codeium/windsurf/skills",
            "qwen-code",
            "openhands",
        ],
    );
}

#[test]
fn install_into_a_missing_project_folder_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    bin()
        .args(["install", "-a", "codex", "--skill"])
        .arg(example_skill())
        .arg("--project")
        .arg(dir.path().join("typo"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such folder"));
    assert!(!dir.path().join("typo").exists());
}

#[test]
fn export_asks_for_force_before_replacing_a_different_skill_of_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("one/my-skill");
    write(
        &first.join("SKILL.md"),
        "---\nname: my-skill\ndescription: First.\n---\n\nOne.\n",
    );
    write(&first.join("references/notes.md"), "Notes.\n");
    let second = dir.path().join("two/my-skill");
    write(
        &second.join("SKILL.md"),
        "---\nname: my-skill\ndescription: Second.\n---\n\nTwo.\n",
    );
    let out = dir.path().join("dist");
    export(&[], &first, &out).success();
    let says = ["holds a different skill", "references/notes.md", "--force"];
    stderr_holds(export(&[], &second, &out).code(2), &says);
    assert!(out.join("my-skill/references/notes.md").is_file());
    // The same skill again is no conflict; --force replaces the other one.
    export(&[], &first, &out).success();
    export(&["--force"], &second, &out).success();
    assert!(!out.join("my-skill/references").exists());
}

#[test]
fn export_into_a_file_and_install_into_a_file_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain.txt");
    std::fs::write(&file, "x").unwrap();
    export(&[], &example_skill(), &file)
        .code(2)
        .stderr(predicate::str::contains(
            "is a file, not a folder to export into",
        ));
    bin()
        .args(["install", "--skill"])
        .arg(example_skill())
        .args(["--agent", "claude-code", "--project"])
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a file, not a folder"));
}
