//! The four coders as the scenarios of `table.rs` see them: which CLI to run, which API the
//! mock speaks to it, how the CLI is pointed at the mock and signed in, and the few ways the
//! CLIs differ in what they report (which the scenarios check only where a CLI says it).
//!
//! Setups, from each CLI's own documentation and the fixtures' READMEs:
//!
//! - **claude**: `ANTHROPIC_BASE_URL` at the mock through `[coders.claude] env`; the key
//!   (`ANTHROPIC_API_KEY=sk-test`) and `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` in the
//!   supervisor's own environment, which agents inherit; the coder's defaults
//!   (`--dangerously-skip-permissions` with `IS_SANDBOX=1`, so it runs tools as root). The
//!   model is `claude-sonnet-4-5`, a 200k-token window: the CLI's default model has 1M, and
//!   the supervisor takes the window from the model the CLI reports.
//! - **codex**: a custom model provider in `$CODEX_HOME/config.toml` pointing at the mock
//!   (`OPENAI_BASE_URL` is ignored by codex), its dummy key in `MOCK_API_KEY`, both passed
//!   through `[coders.codex] env`; the provider retries a failed request once.
//! - **gemini**: `GOOGLE_GEMINI_BASE_URL` at the mock and `GEMINI_API_KEY` through
//!   `[coders.gemini] env`; everything else is the coder's own (`--yolo`,
//!   `GEMINI_CLI_TRUST_WORKSPACE=true`, the agent-private `GEMINI_CLI_HOME` whose settings
//!   select the API-key sign-in, without which the custom endpoint makes the CLI refuse to
//!   start).
//! - **opencode**: an OpenAI-compatible provider `mock` pointing at the mock, given in
//!   `OPENCODE_CONFIG_CONTENT` through `[coders.opencode] env`, with the model
//!   `mock/mock-model`; opencode's model-list fetch and auto-update are turned off (no network
//!   in tests).

use std::path::Path;

use serde_json::json;

use crate::harness::{Sandbox, toml_str};
use crate::mock::{Api, MockApi, Request};
use crate::{Scene, agent_cli, runtime_toml, scenario};

/// Environment for one scene: the coder's `env` in runtime.toml and the supervisor's own.
pub struct Env {
    pub coder: Vec<(&'static str, String)>,
    pub supervisor: Vec<(&'static str, String)>,
}

/// One coder, as the scenarios drive it.
pub struct Coder {
    /// The coder's name in runtime.toml and in the supervisor's events, and the name of its
    /// installed CLI.
    pub name: &'static str,
    /// The `model` of runtime.toml.
    pub model: &'static str,
    /// The model's name as it reaches the API (in the body, or in Gemini's path).
    pub wire_model: &'static str,
    /// The API the mock speaks to the CLI.
    pub api: Api,
    /// The header carrying the API key, and its value.
    pub key_header: (&'static str, &'static str),
    /// The `tool_name` of its shell tool in `events.jsonl`.
    pub shell_tool: &'static str,
    /// Whether each turn of a session is exactly one model request (opencode may ask again
    /// within a turn).
    pub one_request_per_turn: bool,
    /// The context window fleet knows for the coder's model, in tokens.
    pub window: Option<u64>,
    /// The variable that caps the CLI's own retries of a failed request, if it has one
    /// (codex's provider is capped in its config).
    pub retries_var: Option<&'static str>,
    /// The environment of a scene whose mock is `mock`, signed in or not.
    env: fn(sandbox: &Sandbox, mock: &MockApi, signed_in: bool) -> Env,
}

impl Coder {
    /// The installed CLI, or `None` after saying why this coder's tests are skipped.
    pub fn cli(&self) -> Option<std::path::PathBuf> {
        agent_cli(self.name)
    }

    /// A scene for this coder: the mock playing `script`, a runtime.toml pointing the CLI at
    /// it (its settings replaced by `overrides`, its `env` extended by `extra_env`), signed in
    /// or not, and one task. `None` (a skip) when the CLI is not installed.
    pub fn scene(
        &self,
        script: &str,
        overrides: &[(&str, &str)],
        extra_env: &[(&'static str, String)],
        signed_in: bool,
    ) -> Option<Scene> {
        let cli = self.cli()?;
        let sandbox = Sandbox::new();
        let mock = MockApi::start(self.api, scenario(script));
        let mut env = (self.env)(&sandbox, &mock, signed_in);
        env.coder.extend(extra_env.iter().cloned());
        sandbox.write_runtime(&runtime_toml(self.name, self.model, &cli, &env.coder, overrides));
        let id = sandbox.create_task(&format!("e2e {} {script}", self.name));
        Some(Scene { sandbox, mock, id, supervisor_env: env.supervisor })
    }

    /// [`Coder::scene`] signed in, with the settings `overrides`.
    pub fn scene_with(&self, script: &str, overrides: &[(&str, &str)]) -> Option<Scene> {
        self.scene(script, overrides, &[], true)
    }

    /// The environment capping the CLI's own retries at `n`, where it has such a variable.
    pub fn retries(&self, n: u32) -> Vec<(&'static str, String)> {
        self.retries_var.map(|var| (var, n.to_string())).into_iter().collect()
    }

    /// Whether `request` asks for this coder's model.
    pub fn asks_for_the_model(&self, request: &Request) -> bool {
        request.body["model"] == self.wire_model || request.path.contains(self.wire_model)
    }
}

/// The key every signed-in scene uses, but gemini's.
const KEY: &str = "sk-test";
/// Gemini's key.
pub const GEMINI_KEY: &str = "gm-test-key-0123456789";

pub const CLAUDE: Coder = Coder {
    name: "claude",
    model: "claude-sonnet-4-5",
    wire_model: "claude-sonnet-4-5",
    api: Api::Anthropic,
    key_header: ("x-api-key", KEY),
    shell_tool: "Bash",
    one_request_per_turn: true,
    window: Some(200_000),
    retries_var: Some("CLAUDE_CODE_MAX_RETRIES"),
    env: |_, mock, signed_in| {
        let mut supervisor = vec![("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned())];
        if signed_in {
            // No API key anywhere otherwise, and a HOME without a login: the CLI refuses.
            supervisor.insert(0, ("ANTHROPIC_API_KEY", KEY.to_owned()));
        }
        Env { coder: vec![("ANTHROPIC_BASE_URL", mock.base_url())], supervisor }
    },
};

pub const CODEX: Coder = Coder {
    name: "codex",
    model: "gpt-5.5",
    wire_model: "gpt-5.5",
    api: Api::Responses,
    key_header: ("authorization", "Bearer sk-test"),
    shell_tool: "command_execution",
    one_request_per_turn: true,
    window: None,
    retries_var: None,
    env: |sandbox, mock, signed_in| {
        let config = format!(
            "model = {model}\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\n\
             base_url = {url}\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\
             request_max_retries = 1\nstream_max_retries = 1\n",
            model = toml_str(CODEX.model),
            url = toml_str(&format!("{}/v1", mock.base_url())),
        );
        let codex_home = codex_home(sandbox);
        std::fs::create_dir_all(&codex_home).expect("create CODEX_HOME");
        std::fs::write(codex_home.join("config.toml"), config).expect("write codex config");
        let mut coder = vec![("CODEX_HOME", path_text(&codex_home))];
        if signed_in {
            coder.push(("MOCK_API_KEY", KEY.to_owned()));
        }
        Env { coder, supervisor: Vec::new() }
    },
};

/// The `CODEX_HOME` of codex's agents in `sandbox`.
pub fn codex_home(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.root().join("codexhome")
}

pub const GEMINI: Coder = Coder {
    name: "gemini",
    model: "gemini-2.5-flash",
    wire_model: "gemini-2.5-flash",
    api: Api::Gemini,
    key_header: ("x-goog-api-key", GEMINI_KEY),
    shell_tool: "run_shell_command",
    one_request_per_turn: true,
    window: None,
    retries_var: None,
    env: |_, mock, signed_in| {
        let mut coder = vec![("GOOGLE_GEMINI_BASE_URL", mock.base_url())];
        if signed_in {
            coder.push(("GEMINI_API_KEY", GEMINI_KEY.to_owned()));
        }
        Env { coder, supervisor: Vec::new() }
    },
};

pub const OPENCODE: Coder = Coder {
    name: "opencode",
    model: "mock/mock-model",
    wire_model: "mock-model",
    api: Api::Chat,
    key_header: ("authorization", "Bearer sk-test"),
    shell_tool: "bash",
    one_request_per_turn: false,
    window: Some(128_000),
    retries_var: None,
    env: |_, mock, signed_in| {
        let config = opencode_config(mock, signed_in);
        let coder = vec![
            ("OPENCODE_CONFIG_CONTENT", config),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_owned()),
            ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1".to_owned()),
        ];
        Env { coder, supervisor: Vec::new() }
    },
};

/// opencode's config: one OpenAI-compatible provider served by `mock`. Its model claims a
/// 400k window, above fleet's 128k for opencode, so that opencode's own compaction (which it
/// starts by itself when a step overflows the window it knows) does not pre-empt fleet's
/// context pressure in the scenario that tests it.
fn opencode_config(mock: &MockApi, signed_in: bool) -> String {
    let mut options = json!({"baseURL": format!("{}/v1", mock.base_url())});
    if signed_in {
        options["apiKey"] = json!(KEY);
    }
    json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "mock",
            "options": options,
            "models": {"mock-model": {"name": "Mock", "tool_call": true,
                                      "limit": {"context": 400_000, "output": 8_000}}}
        }}
    })
    .to_string()
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}
