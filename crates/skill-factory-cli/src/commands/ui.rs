//! `skill-factory ui [--runs DIR] [--host 127.0.0.1] [--port 8765] [--open]`: the dashboard;
//! `skill-factory ui export RUN_DIR -o report.html`: one run page as a self-contained file.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use skill_factory_io::output::write_atomic;
use skill_factory_io::replace::{Outputs, Recognize};
use skill_factory_ui::server::serve;
use skill_factory_ui::{Dashboard, Options, export};
use tokio::net::TcpListener;

use crate::cli::{UiAction, UiArgs};
use crate::output::{errln, outln};

/// Runs the command: serves until Ctrl-C, or writes the export.
pub async fn run(args: UiArgs) -> anyhow::Result<ExitCode> {
    if let Some(UiAction::Export { run, out, force }) = &args.action {
        return export_run(run, out, *force);
    }
    let ip = address(&args.host)?;
    if !args.runs.is_dir() {
        bail!(
            "--runs {}: no such folder. Pass the folder that holds your run folders (runs/ beside a config by default).",
            args.runs.display()
        );
    }
    let token = (!ip.is_loopback()).then(new_token).transpose()?;
    let listener = TcpListener::bind(SocketAddr::new(ip, args.port)).await.with_context(|| {
        format!(
            "cannot listen on {}:{} (is the port in use? pass another --port, or 0 for any free one)",
            args.host, args.port
        )
    })?;
    let dashboard = Dashboard::new(options(&args.runs, token.clone())?)
        .with_context(|| format!("cannot read the runs folder {}", args.runs.display()))?;
    let mut url = format!("http://{}", listener.local_addr()?);
    if let Some(token) = &token {
        errln!(
            "warning: --host {} makes the dashboard reachable from other machines; it answers only requests that carry its token (open the address below once: it sets a cookie). Anyone with the address can launch runs with your keys.",
            args.host
        );
        url = format!("{url}/?token={token}");
    }
    // Tests and scripts wait for this exact line.
    outln!("Dashboard of {} at {url}", args.runs.display());
    if args.open {
        open_browser(&url);
    }
    serve(listener, dashboard).await?;
    Ok(ExitCode::SUCCESS)
}

/// The dashboard of `runs`: jobs run this binary in the working directory.
fn options(runs: &Path, token: Option<String>) -> anyhow::Result<Options> {
    Ok(Options {
        root: runs.to_path_buf(),
        program: std::env::current_exe().context("cannot find the skill-factory binary")?,
        workdir: std::env::current_dir().context("cannot read the working directory")?,
        token,
    })
}

/// Writes the page of the run folder `run` to `out`.
fn export_run(run: &Path, out: &Path, force: bool) -> anyhow::Result<ExitCode> {
    if !run.join("result.json").is_file() {
        bail!(
            "{}: not a run folder (it has no result.json). Pass a folder `optimize` wrote, such as runs/<config>/latest.",
            run.display()
        );
    }
    let run = run
        .canonicalize()
        .with_context(|| format!("cannot read {}", run.display()))?;
    let (Some(root), Some(name)) = (run.parent(), run.file_name()) else {
        bail!("{}: give the run folder itself, not /", run.display());
    };
    refuse_to_replace(&run, out, force)?;
    let dashboard = Dashboard::new(options(root, None)?)
        .with_context(|| format!("cannot read {}", root.display()))?;
    let html = export::html(&dashboard, &name.to_string_lossy())
        .map_err(|error| anyhow::anyhow!("{}: {error}", run.display()))?;
    write_atomic(out, html.as_bytes())
        .with_context(|| format!("cannot write {}", out.display()))?;
    outln!(
        "Wrote {} ({} KB): the page of {}, self-contained (open it in any browser, no server needed).",
        out.display(),
        html.len().div_ceil(1024),
        run.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses an `out` inside the run folder, ever (its files are the run's record), and one
/// that would replace a file that is not a page of ours, unless `force`.
fn refuse_to_replace(run: &Path, out: &Path, force: bool) -> anyhow::Result<()> {
    // The folder the file would land in, resolved, so `RUN/./x` and links are seen through.
    let folder = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.canonicalize().ok(),
        _ => std::env::current_dir().ok(),
    };
    if folder.is_some_and(|folder| folder.starts_with(run)) {
        bail!(
            "-o {}: that is inside the run folder {}, whose files are the run's record; write the page elsewhere, e.g. -o report.html",
            out.display(),
            run.display()
        );
    }
    Outputs::new(force).check("-o", out, RunPage)?;
    Ok(())
}

/// A page `ui export` wrote.
struct RunPage;

impl Recognize for RunPage {
    fn recognizes(&self, bytes: &[u8]) -> bool {
        export::is_page(bytes)
    }

    fn describe(&self) -> &str {
        "a run page of `skill-factory ui export`"
    }
}

/// The address of `host`.
fn address(host: &str) -> anyhow::Result<IpAddr> {
    match host {
        "localhost" => Ok(IpAddr::from([127, 0, 0, 1])),
        other => other.parse().with_context(|| {
            format!("--host {other:?} is not an IP address; use 127.0.0.1, or 0.0.0.0 for every interface")
        }),
    }
}

/// A fresh random token: 16 bytes from the system's generator, in hex.
fn new_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for the dashboard's token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(error) = std::process::Command::new(opener).arg(url).spawn() {
        errln!("could not open a browser ({opener}: {error}); open {url} yourself");
    }
}
