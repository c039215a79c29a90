//! The integration tests of the engine, in one binary: one module per concern.

mod agent_clis;
mod command_metric;
mod config_reference_examples;
mod evaluate_stages;
mod examples_servers;
mod gallery_entries;
mod gepa;
mod llm_loop;
mod metrics;
mod noise_gate;
mod process_kill;
mod process_session;
mod run_folder;
mod selection;
mod skillopt;
mod subprocess_harness;
mod systemone_metric;
mod trigger_weight;
