//! One check of `fleet doctor`'s setup report, as every kind of check (the config file, each
//! coder, secrets) makes it and the report prints it.

use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warning,
    Problem,
}

/// One check of the setup.
#[derive(Debug, Clone, Serialize)]
pub struct SetupCheck {
    /// What was checked: `runtime.toml`, `coder claude (default)`, `bd for agents`.
    pub subject: String,
    /// Which part of it: `file`, `key`, `program`, `version`, `sign-in`, `link`, `name`.
    pub check: &'static str,
    pub status: Status,
    /// What was found (for a problem: what is wrong).
    pub detail: String,
    /// How to fix it (a command or a config line); absent when the check is ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The line of `runtime.toml` a problem is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl SetupCheck {
    pub fn ok(subject: impl Into<String>, check: &'static str, detail: impl Into<String>) -> Self {
        SetupCheck {
            subject: subject.into(),
            check,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
            line: None,
        }
    }

    pub fn warning(
        subject: impl Into<String>,
        check: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::ok(subject, check, detail).needing(Status::Warning, fix)
    }

    pub fn problem(
        subject: impl Into<String>,
        check: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::ok(subject, check, detail).needing(Status::Problem, fix)
    }

    /// This check, not passed: `status` with `fix`.
    fn needing(self, status: Status, fix: impl Into<String>) -> Self {
        SetupCheck { status, fix: Some(fix.into()), ..self }
    }
}
