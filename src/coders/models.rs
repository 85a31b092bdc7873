//! What fleet knows of models by their names: the context window and the list price of the
//! common ones, so an agent's context percentage and an attempt's cost are right without a
//! line of configuration — also for an attempt fleet killed before its CLI reported a cost
//! (claude reports one only at the end), for Gemini (whose CLI reports none) and for opencode
//! (whose models are `provider/model`).
//!
//! A name matches the longest entry it starts with, case-insensitively, after any
//! `provider/` prefix (`anthropic/claude-sonnet-4-5-20250929` is `claude-sonnet-4-5…`);
//! Claude Code's aliases (`sonnet`, `opus`, `haiku`) are entries of their own. Configuration
//! wins over both tables: `[prices."MODEL"]` for prices, `[coders.NAME] context_limit` (or its
//! per-model table) for windows.
//!
//! Prices are the providers' published list prices in US dollars per million tokens, as of
//! [`PRICES_AS_OF`], for prompts within a model's standard tier; they change, so an override
//! in `runtime.toml` is the way to follow a change before fleet does.

use serde::{Deserialize, Serialize};

/// When the list prices of [`MODELS`] were taken from the providers' price pages.
pub const PRICES_AS_OF: &str = "2025-11";

/// Prices of one model, per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Prompt tokens not read from the cache.
    pub input: f64,
    /// Prompt tokens read from the cache; `None`: the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Generated tokens.
    pub output: f64,
}

impl Price {
    /// The cost in dollars of `prompt` prompt tokens (of which `cached` were cache reads) and
    /// `output` generated tokens.
    pub fn cost(&self, prompt: u64, cached: u64, output: u64) -> f64 {
        let cached = cached.min(prompt);
        let per_token = |price: f64, tokens: u64| price * tokens as f64 / 1_000_000.0;
        per_token(self.input, prompt - cached)
            + per_token(self.cached_input.unwrap_or(self.input), cached)
            + per_token(self.output, output)
    }

    /// Whether every price is a finite, non-negative number.
    pub fn is_valid(&self) -> bool {
        [self.input, self.cached_input.unwrap_or(0.0), self.output]
            .iter()
            .all(|p| p.is_finite() && *p >= 0.0)
    }
}

/// One known model family: names that start with `prefix`.
struct Known {
    prefix: &'static str,
    context: u64,
    /// Input, cached input (a cache read), output.
    price: Option<(f64, f64, f64)>,
}

const fn known(prefix: &'static str, context: u64, price: Option<(f64, f64, f64)>) -> Known {
    Known { prefix, context, price }
}

/// The table. Order does not matter: the longest matching prefix wins.
const MODELS: &[Known] = &[
    // Anthropic, and Claude Code's aliases (the newest model of each line).
    known("claude-opus-4-5", 200_000, Some((5.0, 0.5, 25.0))),
    known("claude-opus-4", 200_000, Some((15.0, 1.5, 75.0))),
    known("claude-sonnet-4", 200_000, Some((3.0, 0.3, 15.0))),
    known("claude-haiku-4", 200_000, Some((1.0, 0.1, 5.0))),
    known("claude-3-7-sonnet", 200_000, Some((3.0, 0.3, 15.0))),
    known("claude-3-5-sonnet", 200_000, Some((3.0, 0.3, 15.0))),
    known("claude-3-5-haiku", 200_000, Some((0.8, 0.08, 4.0))),
    known("claude", 200_000, None),
    known("opus", 200_000, Some((5.0, 0.5, 25.0))),
    known("sonnet", 200_000, Some((3.0, 0.3, 15.0))),
    known("haiku", 200_000, Some((1.0, 0.1, 5.0))),
    // OpenAI.
    known("gpt-5-mini", 400_000, Some((0.25, 0.025, 2.0))),
    known("gpt-5-nano", 400_000, Some((0.05, 0.005, 0.4))),
    known("gpt-5", 400_000, Some((1.25, 0.125, 10.0))),
    known("gpt-4.1-mini", 1_047_576, Some((0.4, 0.1, 1.6))),
    known("gpt-4.1", 1_047_576, Some((2.0, 0.5, 8.0))),
    known("gpt-4o-mini", 128_000, Some((0.15, 0.075, 0.6))),
    known("gpt-4o", 128_000, Some((2.5, 1.25, 10.0))),
    known("o4-mini", 200_000, Some((1.1, 0.275, 4.4))),
    known("o3", 200_000, Some((2.0, 0.5, 8.0))),
    // Google.
    known("gemini-2.5-pro", 1_048_576, Some((1.25, 0.125, 10.0))),
    known("gemini-2.5-flash-lite", 1_048_576, Some((0.1, 0.01, 0.4))),
    known("gemini-2.5-flash", 1_048_576, Some((0.3, 0.03, 2.5))),
    known("gemini-2.0-flash", 1_048_576, Some((0.1, 0.025, 0.4))),
    known("gemini", 1_048_576, None),
    // Open models as opencode and Ollama name them.
    known("qwen3-coder", 262_144, None),
    known("qwen3", 40_960, None),
    known("qwen2.5-coder", 32_768, None),
    known("llama3", 131_072, None),
    known("deepseek", 131_072, None),
    known("kimi-k2", 131_072, None),
    known("glm-4", 131_072, None),
    known("gpt-oss", 131_072, None),
];

/// The entry `model` matches: its name without a `provider/` prefix, lower-cased, against the
/// longest prefix.
fn lookup(model: &str) -> Option<&'static Known> {
    let name = model.rsplit('/').next().unwrap_or(model).trim().to_ascii_lowercase();
    MODELS
        .iter()
        .filter(|known| name.starts_with(known.prefix))
        .max_by_key(|known| known.prefix.len())
}

/// The context window of `model`, when fleet knows it.
pub fn context_window(model: &str) -> Option<u64> {
    lookup(model).map(|known| known.context)
}

/// The list price of `model` (as of [`PRICES_AS_OF`]), when fleet knows it.
pub fn list_price(model: &str) -> Option<Price> {
    let (input, cached, output) = lookup(model)?.price?;
    Some(Price { input, cached_input: Some(cached), output })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_and_providers_are_ignored() {
        assert_eq!(list_price("gpt-5-mini-2025-08-07").map(|p| p.input), Some(0.25));
        assert_eq!(list_price("openai/gpt-5-codex").map(|p| p.input), Some(1.25));
        assert_eq!(context_window("anthropic/claude-sonnet-4-5-20250929"), Some(200_000));
        assert_eq!(context_window("openai/gpt-4.1"), Some(1_047_576));
        assert_eq!(context_window("ollama/qwen3:8b"), Some(40_960));
        assert_eq!(list_price("Sonnet").map(|p| p.output), Some(15.0));
        assert_eq!(context_window("mystery-model"), None);
        assert!(MODELS.iter().filter_map(|m| m.price).all(|(i, c, o)| c <= i && i <= o));
    }

    #[test]
    fn cached_tokens_use_their_own_price_and_default_to_the_input_price() {
        let price = Price { input: 2.0, cached_input: Some(0.5), output: 10.0 };
        let cost = price.cost(1_000_000, 400_000, 100_000);
        assert!((cost - (1.2 + 0.2 + 1.0)).abs() < 1e-9, "{cost}");
        let plain = Price { cached_input: None, ..price };
        assert!((plain.cost(1_000_000, 400_000, 0) - 2.0).abs() < 1e-9);
        assert!(!Price { input: -1.0, ..price }.is_valid());
    }
}
