//! The supervisor (`fleet run`, `fleet demo`) end to end: the real binary drives the
//! scriptable fake agent (`fleet fake-agent`, which prints Claude stream-json), and the tests
//! assert what a user sees — the queue via `fleet show --json`, comments, the files in
//! `$FLEET_HOME/tasks/<id>/`, exit codes and the lines `fleet run` prints. The outcome table is
//! tested directly, as the pure function it is.

#[path = "../common/mod.rs"]
mod common;
mod harness;
mod landing;

mod accounts;
mod agent_stats;
mod agents;
mod budget;
mod canary;
mod claiming;
mod coordination;
mod daemon;
mod demo;
mod escape;
mod full_disk;
mod limits;
mod logging;
mod many;
mod notify;
mod operator;
mod outcome_table;
mod ownership;
mod provider;
mod reload;
mod run_output;
mod secrets;
mod serving;
mod shutdown;
mod store_replaced;
mod taskdir;
mod usage;
