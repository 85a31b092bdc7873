//! fleet: a native beads-compatible task queue, and a supervisor for many coding agents.
//!
//! Every change is an op, applied in one redb transaction and journaled:
//!
//! ```text
//! CLI (fleet, bd) / supervisor / importer      ops made on other machines (Store::replay)
//!         │  typed requests (create, close, claim, dep add…)   │  Op, sorted by
//!         ▼                                                  │  (stamp, replica, id)
//!   tracker ── every rule of a request; typed refusals         │
//!         │  OpKind (op.rs)                                   ▼
//!   Writer::stamp ── Op ──▶ Writer::apply_op(op, Local | Remote)
//!         │                   validate → mutate tables → refresh blocked flags and the
//!         │                   ready index → append the op to the journal table
//!         ▼
//!   redb file (.beads/beads.db) ◀── read transactions: ready, blocked, list, show
//! ```
//!
//! Modules:
//! - [`model`]: issues, statuses, types, priorities, edges, comments, fleet's task fields;
//! - [`op`]: the op record and its metadata (ULID, actor, replica, hybrid logical clock);
//! - [`store`]: the redb tables, `apply`, readiness maintenance, the dependency graph (cycle
//!   refusal, trees) and read queries;
//! - [`workspace`]: the `.beads/` directory — the name of every file fleet keeps there, and
//!   its `.gitignore`;
//! - [`tracker`]: the one layer every front end changes the queue through: requests with
//!   their rules (close guards, edge rules, foreign ids), turned into ops;
//! - [`tracker::claims`]: claiming, one at a time or grouped into shared transactions;
//! - [`beads`]: beads' own formats: importing JSONL (both eras), legacy SQLite databases and
//!   Python-fleet homes; exporting JSONL that `bd import` accepts; auto-export;
//! - [`coord`]: what agents coordinate with besides tasks — messages, file reservations, and
//!   the conservative glob overlap that decides conflicts (records carried by ops);
//! - [`id`]: beads-style hash ids and child ids;
//! - [`settings`]: the workspace settings kept in the store, each declared once, and the one
//!   yes/no parser;
//! - [`place`]: a task's working directory as a place in a git repository, which every machine
//!   resolves in its own checkout;
//! - [`time`]: the clock and the date forms users type;
//! - [`coders`]: the coding-agent CLIs — argv, environment, context limits, and parsers that
//!   turn their stdout into normalized events; built-ins plus coders defined in config;
//! - [`config`]: `runtime.toml` — loading with strict checks, hot-reload support, and the
//!   comment-preserving edits behind `fleet config`;
//! - [`supervisor`]: `fleet run` — claims ready tasks in-process, runs each through a coder
//!   in its own process group, and records every outcome as ops;
//! - [`land`]: a git worktree per task, the verify gate and the merge queue that lands work on
//!   its base branch;
//! - [`process`]: process groups, graceful termination and orphan reaping;
//! - [`redact`]: the one redactor for everything that leaves an agent or reaches the queue:
//!   known token shapes and the values of secret-looking environment variables;
//! - [`fsutil`]: atomic writes of user-visible files;
//! - [`fault`]: fault points for crash tests (`FLEET_FAULT`);
//! - `parallel`: work spread over the machine's cores;
//! - [`ahead`]: work done ahead on idle cores (a large import's journal trees);
//! - [`allocator`]: hints to the binary's allocator (short commands keep freed memory);
//! - [`bench`]: the benchmarks behind `fleet bench` and `benches/`;
//! - [`env`]: every environment variable the library reads, named once;
//! - [`cli`]: argument parsing and output; the only module that prints, and the only one
//!   besides [`env`] that reads the environment.

// A failed write to a closed stdout or stderr must not panic: output goes through
// `cli::output` (`write_stdout`, `write_stderr`), never the printing macros.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod ahead;
pub mod allocator;
pub mod beads;
pub mod bench;
pub mod cli;
pub mod coders;
pub mod config;
pub mod coord;
pub mod env;
pub mod fault;
pub mod fsutil;
pub mod id;
pub mod journal;
pub mod land;
pub mod model;
pub mod notify;
pub mod op;
pub(crate) mod parallel;
pub mod place;
pub mod process;
pub mod redact;
pub mod server;
pub mod settings;
pub mod store;
pub mod supervisor;
pub mod time;
pub mod tracker;
pub mod workspace;
