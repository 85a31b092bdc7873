//! The price table: `[prices."MODEL"]` tables in `runtime.toml`, in US dollars per million
//! tokens, for models whose CLI reports token counts but no cost (codex, most custom coders).
//!
//! ```toml
//! [prices."gpt-5-codex"]
//! input = 1.25          # prompt tokens not read from the cache
//! cached_input = 0.125  # prompt tokens read from the cache (default: input)
//! output = 10.0
//! ```
//!
//! A cost the CLI reports itself (claude's `total_cost_usd`) always wins over the table.

use serde::{Deserialize, Serialize};

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

/// The price of `model`: its `[prices."MODEL"]` entry in `table`, else the list price fleet
/// knows ([`crate::coders::models`]).
pub fn price_of(table: &std::collections::BTreeMap<String, Price>, model: &str) -> Option<Price> {
    table.get(model).copied().or_else(|| crate::coders::models::list_price(model))
}

/// The field names of a `[prices."MODEL"]` table.
pub const PRICE_KEYS: [&str; 3] = ["input", "cached_input", "output"];

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

#[cfg(test)]
mod tests {
    use super::*;

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
