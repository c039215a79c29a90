//! `skill-factory ui [--runs DIR] [--host 127.0.0.1] [--port 8765] [--open]`: the dashboard.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use anyhow::{Context, bail};
use skill_factory_ui::Dashboard;
use skill_factory_ui::server::serve;
use tokio::net::TcpListener;

use crate::cli::UiArgs;
use crate::output::{errln, outln};

/// Runs the command: serves until Ctrl-C.
pub async fn run(args: UiArgs) -> anyhow::Result<ExitCode> {
    let ip = loopback(&args.host)?;
    if !args.runs.is_dir() {
        bail!(
            "--runs {}: no such folder. Pass the folder that holds your run folders (runs/ beside a config by default).",
            args.runs.display()
        );
    }
    let listener = TcpListener::bind(SocketAddr::new(ip, args.port)).await.with_context(|| {
        format!(
            "cannot listen on {}:{} (is the port in use? pass another --port, or 0 for any free one)",
            args.host, args.port
        )
    })?;
    let url = format!("http://{}", listener.local_addr()?);
    // Tests and scripts wait for this exact line.
    outln!("Dashboard of {} at {url}", args.runs.display());
    if args.open {
        open_browser(&url);
    }
    serve(listener, Dashboard::new(args.runs)).await?;
    Ok(ExitCode::SUCCESS)
}

/// The address of `host`, refused unless it is a loopback one.
fn loopback(host: &str) -> anyhow::Result<IpAddr> {
    let ip: IpAddr = match host {
        "localhost" => IpAddr::from([127, 0, 0, 1]),
        other => other
            .parse()
            .with_context(|| format!("--host {other:?} is not an IP address; use 127.0.0.1"))?,
    };
    if !ip.is_loopback() {
        bail!(
            "--host {host}: the dashboard has no access token yet, so it only listens on a loopback address (127.0.0.1 or ::1); reach it from another machine through an SSH tunnel"
        );
    }
    Ok(ip)
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
