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

pub use crate::coders::models::Price;

/// The price of `model`: its `[prices."MODEL"]` entry in `table`, else the list price fleet
/// knows ([`crate::coders::models`]).
pub fn price_of(table: &std::collections::BTreeMap<String, Price>, model: &str) -> Option<Price> {
    table.get(model).copied().or_else(|| crate::coders::models::list_price(model))
}

/// The field names of a `[prices."MODEL"]` table.
pub const PRICE_KEYS: [&str; 3] = ["input", "cached_input", "output"];
