//! `export`, `validate` and `install` as a user runs them: the Agent Skills layout on disk,
//! the messages, the exit codes, and the agents' folders (project and `--global`).

use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::common::{bin, repo_root};

fn example_skill() -> PathBuf {
    repo_root().join("examples/invoice-extractor/seed_skill.md")
}

fn fixture_skill() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf-form-notes")
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn export_writes_the_skill_folder_and_prints_the_install_hint() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("dist");
    let skill_dir = dir.join("invoice-extractor");
    bin()
        .args(["export", "--skill"])
        .arg(example_skill())
        .arg("-o")
        .arg(&dir)
        .assert()
        .success()
        .stdout(format!(
            "Emitted skill → {}\nInstall into an agent with:\n  npx skills add {}\nor copy the \
             folder into ~/.claude/skills, ~/.codex/skills, etc.\n",
            skill_dir.join("SKILL.md").display(),
            skill_dir.display()
        ));
    assert!(read(&skill_dir.join("SKILL.md")).starts_with("---\nname: invoice-extractor\n"));
    bin()
        .arg("validate")
        .arg(&skill_dir)
        .assert()
        .success()
        .stdout(predicate::str::contains("SKILL.md: ok"));
}

#[test]
fn collection_export_goes_under_skills() {
    let out = tempfile::tempdir().unwrap();
    bin()
        .args(["export", "--collection", "--skill"])
        .arg(example_skill())
        .arg("-o")
        .arg(out.path())
        .assert()
        .success();
    assert!(
        out.path()
            .join("skills/invoice-extractor/SKILL.md")
            .is_file()
    );
    bin()
        .arg("validate")
        .arg(out.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("Checked 1 skill: 0 errors"));
}

#[test]
fn export_carries_references_scripts_and_assets_byte_for_byte() {
    let out = tempfile::tempdir().unwrap();
    bin()
        .args(["export", "--skill"])
        .arg(fixture_skill().join("SKILL.md"))
        .arg("-o")
        .arg(out.path())
        .assert()
        .success()
        .stderr("");
    let exported = out.path().join("pdf-form-notes");
    for file in [
        "SKILL.md",
        "references/fields.md",
        "scripts/check.sh",
        "assets/template.txt",
    ] {
        assert_eq!(
            read(&exported.join(file)),
            read(&fixture_skill().join(file)),
            "{file}"
        );
    }
}

#[test]
fn invalid_name_is_exported_as_its_slug_with_a_warning_line() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("skill.md");
    write(
        &source,
        "---\nname: My Skill!\ndescription: Does it.\n---\n\nBody.\n",
    );
    bin()
        .args(["export", "--skill"])
        .arg(&source)
        .arg("-o")
        .arg(dir.path().join("out"))
        .assert()
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
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("skill.md");
    write(
        &source,
        "---\nname: my-skill\ndescription: Does it.\nversion: 0.2\nauthor: Ada\n---\n\nBody.\n",
    );
    // validate says what is wrong and that export repairs it.
    bin()
        .arg("validate")
        .arg(&source)
        .assert()
        .code(2)
        .stdout(predicate::str::contains("error [unknown-key]: 'version'"))
        .stdout(predicate::str::contains(
            "`skill-factory export` moves it there for you",
        ));
    let out = dir.path().join("dist");
    bin()
        .args(["export", "--skill"])
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "warning [moved-to-metadata]: version, author are not Agent Skills frontmatter keys",
        ));
    let exported = out.join("my-skill");
    assert_eq!(
        read(&exported.join("SKILL.md")),
        "---\nname: my-skill\ndescription: Does it.\nmetadata:\n  version: '0.2'\n  author: Ada\n---\n\nBody.\n"
    );
    bin()
        .arg("validate")
        .arg(&exported)
        .assert()
        .success()
        .stdout(predicate::str::contains("SKILL.md: ok"));
}

#[test]
fn export_without_description_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("skill.md");
    write(&source, "---\nname: my-skill\n---\n\nBody.\n");
    bin()
        .args(["export", "--skill"])
        .arg(&source)
        .arg("-o")
        .arg(dir.path().join("out"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nothing was written"))
        .stderr(predicate::str::contains("error [description-required]"))
        .stderr(predicate::str::contains("Fix: Add `description:"));
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
    bin()
        .args(["export", "--skill"])
        .arg(dir.path().join("my-skill"))
        .arg("-o")
        .arg(dir.path().join("out"))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "warning [symlink]: leak.txt is a symbolic link; it is not carried along.",
        ));
    assert!(!dir.path().join("out/my-skill/leak.txt").exists());
}

#[test]
fn validate_reports_bad_name_missing_description_and_folder_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("bad/SKILL.md"),
        "---\nname: Bad--Name\n---\n\nBody.\n",
    );
    bin()
        .arg("validate")
        .arg(dir.path().join("bad"))
        .assert()
        .code(2)
        .stdout(predicate::str::contains("error [name-characters]"))
        .stdout(predicate::str::contains("error [name-hyphens]"))
        .stdout(predicate::str::contains("error [description-required]"))
        .stdout(predicate::str::contains("error [name-matches-folder]"))
        .stdout(predicate::str::contains("Fix: Write `name: bad-name`"))
        .stdout(predicate::str::contains(
            "Checked 1 skill: 4 errors, 0 warnings.",
        ));
}

#[test]
fn validate_refuses_a_skill_whose_description_or_body_holds_escape_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("my-skill/SKILL.md");
    write(
        &file,
        "---\nname: my-skill\ndescription: \"Does a thing\\e]0;owned\\a.\"\n---\n\nSee \u{1b}]8;;https://evil.example\u{7}here\u{1b}]8;;\u{7}.\n",
    );
    bin()
        .arg("validate")
        .arg(&file)
        .assert()
        .code(2)
        .stdout(predicate::str::contains("error [control-characters]"))
        .stdout(predicate::str::contains("The description holds"))
        .stdout(predicate::str::contains("The body holds"))
        .stdout(predicate::str::contains('\u{1b}').not());
}

#[test]
fn validate_passes_with_warnings_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("skill.md");
    write(
        &file,
        "---\nname: my-skill\ndescription: d\nmodel: opus\n---\n\nBody.\n",
    );
    bin()
        .arg("validate")
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("warning [agent-specific-key]"))
        .stdout(predicate::str::contains("0 errors, 1 warning."));
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
    bin()
        .arg("validate")
        .arg(dir.path())
        .assert()
        .code(2)
        .stdout(predicate::str::contains("error [unknown-key]: 'version'"))
        .stdout(predicate::str::contains("good/SKILL.md: ok"))
        .stdout(predicate::str::contains(
            "Checked 2 skills: 1 error, 0 warnings.",
        ));
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
    bin()
        .current_dir(project.path())
        .args(["install", "--skill"])
        .arg(fixture_skill())
        .args(["--agent", "claude-code", "--agent", "cursor,windsurf"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Installed pdf-form-notes for claude-code → ./.claude/skills/pdf-form-notes",
        ))
        .stdout(predicate::str::contains(
            "Installed pdf-form-notes for cursor → ./.cursor/skills/pdf-form-notes",
        ))
        .stdout(predicate::str::contains(
            "Installed pdf-form-notes for windsurf → ./.windsurf/skills/pdf-form-notes",
        ));
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
    install(&changed, false)
        .code(2)
        .stderr(predicate::str::contains(
            "a different skill named \"invoice-extractor\" is already installed",
        ))
        .stderr(predicate::str::contains("Pass --force to replace it"));
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
    bin()
        .args(["install", "--skill"])
        .arg(example_skill())
        .args(["-a", "cursr"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown agent \"cursr\""))
        .stderr(predicate::str::contains("Did you mean \"cursor\"?"));
}

#[test]
fn list_agents_shows_project_and_global_folders() {
    bin()
        .args(["install", "--list-agents"])
        .assert()
        .success()
        .stdout(predicate::str::contains("claude-code (claude)"))
        .stdout(predicate::str::contains("~/.codeium/windsurf/skills"))
        .stdout(predicate::str::contains("qwen-code"))
        .stdout(predicate::str::contains("openhands"));
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
    bin()
        .args(["export", "--skill"])
        .arg(&first)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    bin()
        .args(["export", "--skill"])
        .arg(&second)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds a different skill"))
        .stderr(predicate::str::contains("references/notes.md"))
        .stderr(predicate::str::contains("--force"));
    assert!(out.join("my-skill/references/notes.md").is_file());
    // The same skill again is no conflict; --force replaces the other one.
    bin()
        .args(["export", "--skill"])
        .arg(&first)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    bin()
        .args(["export", "--force", "--skill"])
        .arg(&second)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert!(!out.join("my-skill/references").exists());
}

#[test]
fn export_into_a_file_and_install_into_a_file_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain.txt");
    std::fs::write(&file, "x").unwrap();
    bin()
        .args(["export", "--skill"])
        .arg(example_skill())
        .arg("-o")
        .arg(&file)
        .assert()
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
