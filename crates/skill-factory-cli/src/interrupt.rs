//! Quitting on a signal without leaving children behind.
//!
//! Process harnesses run each child in its own process group, so the terminal's Ctrl-C and a
//! `kill` of Skill Factory reach only Skill Factory. Whenever it quits at once, it first kills
//! every child still running ([`skill_factory_io::process::kill_running_children`]):
//!
//! * SIGTERM and SIGHUP, for every command: exit 143 / 129;
//! * Ctrl-C (SIGINT): exit 130 at once for every command but `optimize`, whose first Ctrl-C
//!   stops the run gracefully (see `commands/optimize.rs`) and whose second quits here.

use tokio::task::JoinHandle;

use crate::output::errln;

/// The exit status of a command ended by Ctrl-C (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// Kills the children still running, stops the run's Ray jobs and the local model engines,
/// and exits with `code`.
pub fn quit(code: i32) -> ! {
    skill_factory_io::process::kill_running_children();
    skill_factory::ray::stop_running_jobs();
    skill_factory_llm::local::shutdown();
    crate::output::flush_log();
    std::process::exit(code)
}

/// Watches for SIGTERM and SIGHUP for the whole life of the process.
pub fn quit_on_termination() {
    use tokio::signal::unix::{SignalKind, signal};
    for (kind, code) in [(SignalKind::terminate(), 143), (SignalKind::hangup(), 129)] {
        if let Ok(mut stream) = signal(kind) {
            tokio::spawn(async move {
                if stream.recv().await.is_some() {
                    quit(code);
                }
            });
        }
    }
}

/// Quits on the first Ctrl-C.
pub fn quit_on_ctrl_c() -> JoinHandle<()> {
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            // Children first: the message may meet a closed pipe, which ends the process.
            skill_factory_io::process::kill_running_children();
            errln!("Interrupted.");
            quit(i32::from(INTERRUPTED));
        }
    })
}
