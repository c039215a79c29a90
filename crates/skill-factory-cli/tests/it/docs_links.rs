//! Every link of the README and the docs leads somewhere: a relative link names a file or folder
//! of the repository, and its `#anchor` a heading of that file as GitHub names it. External
//! links are never fetched (no test reaches the internet), only checked to be well-formed.
//!
//! The pages are read with a Markdown parser, so a link-like text in a code block or a code span
//! is not taken for a link, and a heading-like line of a fenced block is not a heading.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{BrokenLink, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

use crate::common;

/// The guide's chapters in reading order, relative to the repository's root: the pages under
/// `guide/` that mdBook's table of contents, `docs/SUMMARY.md`, lists, as it lists them.
pub(crate) fn guide_chapters(root: &Path) -> Vec<PathBuf> {
    let summary = std::fs::read_to_string(root.join("docs/SUMMARY.md")).unwrap();
    Parser::new(&summary)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. }) if dest_url.starts_with("guide/") => {
                Some(Path::new("docs").join(&*dest_url))
            }
            _ => None,
        })
        .collect()
}

/// The pages whose links are checked, relative to the repository's root: the README, every
/// page of `docs/` and of the guide's folder `docs/guide/`, each example's README and the
/// gallery's index.
pub(crate) fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut markdown_in = |folder: &Path| {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(folder))
            .unwrap()
            .map(|entry| folder.join(entry.unwrap().file_name()))
            .filter(|path| path.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        pages.extend(found);
    };
    markdown_in(Path::new("docs"));
    markdown_in(Path::new("docs/guide"));
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root.join("examples"))
        .unwrap()
        .map(|entry| {
            Path::new("examples")
                .join(entry.unwrap().file_name())
                .join("README.md")
        })
        .collect();
    examples.sort();
    pages.extend(examples);
    pages.push(PathBuf::from("gallery/README.md"));
    pages.retain(|page| root.join(page).is_file());
    pages
}

/// GitHub's Markdown, as far as links and headings go: tables (links in cells), strikethrough,
/// task lists and footnotes.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
}

/// A link of a page: where it points, and the line it is on.
struct Link {
    destination: String,
    line: usize,
}

/// What a page holds for this check: its links, and the anchors of its headings.
struct Page {
    links: Vec<Link>,
    anchors: HashSet<String>,
    /// `[text][label]` references whose label no definition gives (GitHub shows them as text).
    unresolved: Vec<(String, usize)>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

fn read_page(text: &str) -> Page {
    let mut unresolved = Vec::new();
    // Only full and collapsed references: a shortcut `[x]` without a definition is ordinary
    // text in prose ("[pass, flag, block]"), not a link that lost its target.
    let mut broken = |link: BrokenLink<'_>| -> Option<(CowStr<'_>, CowStr<'_>)> {
        if matches!(link.link_type, LinkType::Reference | LinkType::Collapsed) {
            unresolved.push((link.reference.to_string(), link.span.start));
        }
        None
    };
    let parser = Parser::new_with_broken_link_callback(text, options(), Some(&mut broken));
    let mut links = Vec::new();
    let mut headings = Vec::new();
    let mut heading: Option<String> = None;
    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => headings.extend(heading.take()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(heading) = heading.as_mut() {
                    heading.push_str(&t);
                }
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => {
                let destination = if link_type == LinkType::Email {
                    format!("mailto:{dest_url}")
                } else {
                    dest_url.to_string()
                };
                links.push(Link {
                    destination,
                    line: line_of(text, range.start),
                });
            }
            Event::Start(Tag::Image { dest_url, .. }) => links.push(Link {
                destination: dest_url.to_string(),
                line: line_of(text, range.start),
            }),
            _ => {}
        }
    }
    Page {
        links,
        anchors: anchors(&headings),
        unresolved: unresolved
            .into_iter()
            .map(|(label, at)| (label, line_of(text, at)))
            .collect(),
    }
}

/// The anchor GitHub gives a heading of this text: lowercased, every character removed that is
/// not a letter, a digit, a space, `-` or `_`, then each space turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings in order; a slug already taken gets `-1`, `-2`, ... as on
/// GitHub.
fn anchors(headings: &[String]) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut anchors = HashSet::new();
    for heading in headings {
        let base = slug(heading);
        let count = seen.entry(base.clone()).or_insert(0);
        let anchor = if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        };
        *count += 1;
        anchors.insert(anchor);
    }
    anchors
}

/// `%20` and the like in a link's path, decoded as GitHub does before finding the file.
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = path
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why an external link is not well-formed, if it is not: an `http`/`https` URL with a host, or
/// a `mailto:` with an address.
fn external_problem(destination: &str) -> Option<String> {
    if let Some(address) = destination.strip_prefix("mailto:") {
        let well_formed = address
            .split_once('@')
            .is_some_and(|(user, domain)| !user.is_empty() && domain.contains('.'));
        return (!well_formed).then(|| format!("{destination}: not an e-mail address"));
    }
    match reqwest::Url::parse(destination) {
        Ok(url) if url.host_str().is_some_and(|host| !host.is_empty()) => None,
        Ok(_) => Some(format!("{destination}: no host")),
        Err(e) => Some(format!("{destination}: {e}")),
    }
}

/// `from` joined with a relative path, `..` resolved without touching the disk; `None` when it
/// climbs above the repository's root.
fn joined(from: &Path, relative: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in from.join(relative).components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Every problem of one link of `page` (a path relative to `root`), as a message.
fn check_link(
    root: &Path,
    page: &Path,
    link: &Link,
    cache: &mut HashMap<PathBuf, Page>,
) -> Option<String> {
    let destination = link.destination.as_str();
    let at = format!("{}:{}", page.display(), link.line);
    if destination.is_empty() {
        return Some(format!("{at}: a link with no destination"));
    }
    if let Some((scheme, _)) = destination.split_once(':')
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return match scheme {
            "http" | "https" | "mailto" => {
                external_problem(destination).map(|problem| format!("{at}: {problem}"))
            }
            _ => Some(format!(
                "{at}: {destination}: a scheme other than http, https or mailto"
            )),
        };
    }
    let (path, anchor) = match destination.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (destination, None),
    };
    // A link to the page itself (`#anchor`), to a path from the repository's root (`/docs/...`,
    // as GitHub reads it), or relative to the page's folder.
    let target = if path.is_empty() {
        Some(page.to_path_buf())
    } else if let Some(from_root) = path.strip_prefix('/') {
        joined(Path::new(""), &percent_decoded(from_root))
    } else {
        joined(page.parent().unwrap(), &percent_decoded(path))
    };
    let Some(target) = target else {
        return Some(format!("{at}: {destination} leaves the repository"));
    };
    let on_disk = root.join(&target);
    if !on_disk.exists() {
        return Some(format!(
            "{at}: {destination}: {} is not in the repository",
            target.display()
        ));
    }
    let anchor = anchor?;
    if on_disk.is_dir() {
        return Some(format!("{at}: {destination}: an anchor on a folder"));
    }
    if target.extension().is_none_or(|e| e != "md") {
        // GitHub's line anchors of a source file (`#L12`, `#L12-L20`) are the only ones a file
        // that is not Markdown has.
        let lines = anchor.strip_prefix('L').is_some_and(|rest| {
            rest.split("-L")
                .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        });
        return (!lines).then(|| format!("{at}: {destination}: not a line anchor of a file"));
    }
    let read = cache.entry(target.clone()).or_insert_with(|| {
        read_page(&std::fs::read_to_string(&on_disk).unwrap_or_else(|e| {
            panic!("{}: {e}", on_disk.display());
        }))
    });
    let anchor = percent_decoded(anchor);
    (!read.anchors.contains(&anchor)).then(|| {
        let mut known: Vec<&String> = read.anchors.iter().collect();
        known.sort();
        let closest = known
            .iter()
            .min_by_key(|known| strsim::levenshtein(known, &anchor))
            .map(|known| format!(" (the closest heading: #{known})"))
            .unwrap_or_default();
        format!(
            "{at}: {destination}: no heading of {} has the anchor #{anchor}{closest}",
            target.display()
        )
    })
}

/// The problem of one link to `destination` written in `page` (a path relative to `root`), if
/// any: what [`every_link_of_the_readme_and_the_docs_resolves`] says of a page's link.
pub(crate) fn link_problem(root: &Path, page: &Path, destination: &str) -> Option<String> {
    let link = Link {
        destination: destination.to_owned(),
        line: 1,
    };
    check_link(root, page, &link, &mut HashMap::new())
}

#[test]
fn every_link_of_the_readme_and_the_docs_resolves() {
    let root = common::repo_root();
    let pages = pages(&root);
    let chapters = guide_chapters(&root);
    assert!(chapters.len() > 10, "docs/SUMMARY.md lists {chapters:?}");
    for chapter in &chapters {
        assert!(
            pages.contains(chapter),
            "{} not in {pages:?}",
            chapter.display()
        );
    }
    let mut cache: HashMap<PathBuf, Page> = HashMap::new();
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let read = read_page(&std::fs::read_to_string(root.join(page)).unwrap());
        for (label, line) in &read.unresolved {
            problems.push(format!(
                "{}:{line}: [{label}] is a reference no link definition gives",
                page.display()
            ));
        }
        for link in &read.links {
            checked += 1;
            problems.extend(check_link(&root, page, link, &mut cache));
        }
        cache.insert(page.clone(), read);
    }
    assert!(checked > 100, "only {checked} links found in {pages:?}");
    assert!(
        problems.is_empty(),
        "{} broken links:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_page_of_the_guide_is_a_chapter_of_the_book() {
    let root = common::repo_root();
    let chapters = guide_chapters(&root);
    for page in pages(&root) {
        if page.parent() == Some(Path::new("docs/guide")) {
            assert!(
                chapters.contains(&page),
                "{}: docs/SUMMARY.md does not list it, so the book and the test of the guide's \
                 commands (doc_commands.rs) leave it out: add it there",
                page.display()
            );
        }
    }
    let mut seen = HashSet::new();
    for chapter in &chapters {
        assert!(
            seen.insert(chapter),
            "docs/SUMMARY.md lists {} twice",
            chapter.display()
        );
        assert!(
            root.join(chapter).is_file(),
            "docs/SUMMARY.md lists {}, which is missing",
            chapter.display()
        );
    }
}

#[test]
fn anchors_follow_githubs_rules() {
    let headings: Vec<String> = [
        "Noise: samples, intervals and honest gates",
        "Triggering: does the skill load when it should?",
        "Compatibility with the Python skill-factory 0.2.0",
        "snake_case and CAPS",
        "Subcommands:",
        "Subcommands:",
        "Subcommands:",
        "Température × 2",
    ]
    .map(String::from)
    .to_vec();
    let got = anchors(&headings);
    for anchor in [
        "noise-samples-intervals-and-honest-gates",
        "triggering-does-the-skill-load-when-it-should",
        "compatibility-with-the-python-skill-factory-020",
        "snake_case-and-caps",
        "subcommands",
        "subcommands-1",
        "subcommands-2",
        "température--2",
    ] {
        assert!(got.contains(anchor), "{anchor} not in {got:?}");
    }
}

#[test]
fn code_is_not_taken_for_links_or_headings() {
    let page = read_page(
        "# Title `with code`\n\n```text\n## Not a heading\n[not](a-link.md)\n```\n\n\
         `[nor](this.md)` but [this](real.md#title-with-code) and <a@b.io>\n",
    );
    let destinations: Vec<&str> = page.links.iter().map(|l| l.destination.as_str()).collect();
    assert_eq!(destinations, ["real.md#title-with-code", "mailto:a@b.io"]);
    assert_eq!(page.links[0].line, 8);
    assert_eq!(page.anchors, HashSet::from(["title-with-code".to_string()]));
}

#[test]
fn external_links_are_checked_for_form_only() {
    assert_eq!(external_problem("https://github.com/leeoniya/uPlot"), None);
    assert_eq!(external_problem("mailto:someone@example.org"), None);
    assert!(external_problem("https://").is_some());
    assert!(external_problem("http://exa mple.org").is_some());
    assert!(external_problem("mailto:nobody").is_some());
}

#[test]
fn a_link_to_a_missing_file_or_heading_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("docs/images")).unwrap();
    std::fs::write(root.join("docs/a.md"), "# A page\n\n## Twice\n\n## Twice\n").unwrap();
    std::fs::write(root.join("main.rs"), "fn main() {}\n").unwrap();
    let problems = |destination: &str| {
        let link = Link {
            destination: destination.to_owned(),
            line: 3,
        };
        check_link(root, Path::new("docs/b.md"), &link, &mut HashMap::new())
    };
    for fine in [
        "a.md",
        "a.md#a-page",
        "a.md#twice-1",
        "./images",
        "../main.rs#L1-L2",
        "/docs/a.md#twice",
        "https://example.org/x?y#z",
    ] {
        assert_eq!(problems(fine), None, "{fine}");
    }
    for (broken, says) in [
        ("c.md", "docs/c.md is not in the repository"),
        (
            "a.md#twice-2",
            "no heading of docs/a.md has the anchor #twice-2",
        ),
        ("images#x", "an anchor on a folder"),
        ("../main.rs#main", "not a line anchor"),
        ("../../outside.md", "leaves the repository"),
        ("ftp://example.org/x", "a scheme other than"),
    ] {
        let problem = problems(broken).unwrap_or_else(|| panic!("{broken} passed"));
        assert!(problem.starts_with("docs/b.md:3: "), "{problem}");
        assert!(problem.contains(says), "{problem}");
    }
}
