//! The command line's names for the library's enums: clap parses them here, so the library's
//! types carry no clap derive (clap's types stay in the CLI).
//!
//! Each name is the one a `#[derive(clap::ValueEnum)]` would give (kebab-case), so the
//! command line reads as it did; the help of a value is its variant's meaning.

use crate::bench::{Engine, ReadQuery, Shape};
use crate::store::ListSort;
use crate::supervisor::stats::GroupBy;

/// `impl clap::ValueEnum` for a library enum, from its variants' names and help.
macro_rules! value_enum {
    ($ty:ident { $($variant:ident => $name:literal $(: $help:literal)?),+ $(,)? }) => {
        impl clap::ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &[$($ty::$variant),+]
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(match self {
                    $($ty::$variant => clap::builder::PossibleValue::new($name)$(.help($help))?),+
                })
            }
        }
    };
}

value_enum!(ListSort {
    Priority => "priority": "Priority, then newest first",
    Created => "created",
    Updated => "updated",
    Id => "id",
    Title => "title",
    Status => "status",
});

value_enum!(GroupBy { Coder => "coder", Model => "model", Cwd => "cwd", Account => "account" });

value_enum!(Engine { Fleet => "fleet", Sqlite => "sqlite" });

value_enum!(ReadQuery {
    Ready => "ready": "`fleet ready`: the first 100 ready issues, as text",
    ReadyJson => "ready-json": "`fleet ready --json`: the same, as JSON with the edge counts",
    List => "list": "`fleet list --json -n 50`: the first 50 issues that are not closed",
    Blocked => "blocked": "`fleet blocked --json`: the first page of blocked issues",
    Search => "search": "`fleet search \"issue 4242\" --json`: open issues with that text",
    Count => "count": "`bd count`: how many issues there are",
});

value_enum!(Shape {
    Spawn => "spawn": "One process per claim",
    Loop => "loop": "Long-lived processes claiming in a loop",
    Threads => "threads": "Threads of one process",
    Cycle => "cycle": "Agents running ready → claim → close, a process per command",
});

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    #[test]
    fn every_name_parses_back_to_its_variant() {
        fn round_trips<T: ValueEnum + PartialEq + std::fmt::Debug>() {
            for variant in T::value_variants() {
                let name = variant.to_possible_value().unwrap();
                assert_eq!(&T::from_str(name.get_name(), false).unwrap(), variant);
            }
        }
        round_trips::<ListSort>();
        round_trips::<GroupBy>();
        round_trips::<Engine>();
        round_trips::<ReadQuery>();
        round_trips::<Shape>();
        assert_eq!(ReadQuery::from_str("ready-json", false), Ok(ReadQuery::ReadyJson));
    }
}
