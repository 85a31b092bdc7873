//! The one redactor for everything that leaves an agent or reaches the queue: task files
//! (`task.json`, `events.jsonl`, `log.jsonl`, `log.stderr`), and the comments and notes the
//! supervisor writes.
//!
//! A [`Redactor`] masks two kinds of secret:
//!
//! - **known token shapes**, found anywhere in text: Anthropic (`sk-ant-…`) and OpenAI
//!   (`sk-…`, `sk-proj-…`) keys, GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`,
//!   `github_pat_`), AWS access key ids (`AKIA`/`ASIA`), Slack tokens (`xoxb-` …), Google API
//!   keys (`AIza…`), JWTs, and the credentials of `Bearer` and `Basic` authorization;
//! - **configured values**: the exact values of environment variables whose names look secret
//!   ([`is_secret_name`]), or any values given to [`Redactor::new`].
//!
//! Each secret becomes a marker that keeps its kind visible and nothing of the secret beyond
//! its public prefix: `ghp_<redacted>`, `Bearer <redacted>`, `<redacted:jwt>`,
//! `<redacted:OPENAI_API_KEY>`. Token shapes start at a word boundary and have minimum lengths
//! (and, for the looser shapes, a digit), so ordinary words, ids and paths (`task-1`,
//! `skeleton`, `sk-learn`) are left alone. A text is scanned in two passes, each an
//! Aho-Corasick automaton: one for every configured value at once, one for the prefixes a
//! token shape starts with (the shapes' rules are then checked only where one starts); there
//! is no regex engine.
//!
//! Terminal escape sequences are removed first
//! ([`strip_ansi`](crate::coders::diagnose::strip_ansi)): opencode colours its output even with
//! `NO_COLOR`, colour codes have no place in files and comments, and a code inside a key would
//! hide it from the shapes.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};
use serde_json::Value;

/// What replaces the value of a secret-looking JSON key.
pub const REDACTED: &str = "<redacted>";

/// Configured values shorter than this are not masked: `1` or `true` would otherwise vanish
/// from every line.
pub const MIN_SECRET_LEN: usize = 8;

/// Masks secrets in text and JSON. Cheap to clone (the configured values are shared), and
/// `Send + Sync`. [`Redactor::default`] masks token shapes only.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Arc<Secrets>,
}

/// The configured values of a [`Redactor`].
#[derive(Default)]
struct Secrets {
    /// Longest first, so a value containing another is masked whole.
    list: Vec<Secret>,
    /// Finds every value of `list` in one pass over a text (its pattern `i` is `list[i]`);
    /// `None` when there are no values.
    finder: Option<AhoCorasick>,
}

/// One configured value and its marker.
struct Secret {
    value: String,
    marker: String,
}

impl fmt::Debug for Redactor {
    /// Never prints the values themselves.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor").field("secret_values", &self.secrets.list.len()).finish()
    }
}

impl Redactor {
    /// A redactor for these exact values (each becomes `<redacted>`), plus the token shapes.
    /// Values shorter than [`MIN_SECRET_LEN`] are ignored.
    pub fn new(secret_values: impl IntoIterator<Item = String>) -> Redactor {
        Redactor::from_secrets(
            secret_values.into_iter().map(|value| Secret { value, marker: REDACTED.to_owned() }),
        )
    }

    /// A redactor for the values of the variables whose names look secret
    /// ([`is_secret_name`]); each becomes `<redacted:NAME>`. Values shorter than
    /// [`MIN_SECRET_LEN`] are ignored.
    pub fn from_env<'a>(env: impl IntoIterator<Item = (&'a str, &'a str)>) -> Redactor {
        Redactor::from_secrets(env.into_iter().filter(|(name, _)| is_secret_name(name)).map(
            |(name, value)| Secret {
                value: value.to_owned(),
                marker: format!("<redacted:{name}>"),
            },
        ))
    }

    fn from_secrets(secrets: impl Iterator<Item = Secret>) -> Redactor {
        let mut secrets: Vec<Secret> =
            secrets.filter(|secret| secret.value.len() >= MIN_SECRET_LEN).collect();
        // Longest first; among equal values the first given keeps its marker.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.value.len()));
        let mut seen = std::collections::HashSet::new();
        secrets.retain(|secret| seen.insert(secret.value.clone()));
        // Building fails only past the automaton's size limits, far beyond any environment's
        // values; the values are then searched one by one.
        // A contiguous NFA: a few hundred bytes per value where a DFA takes kilobytes, and
        // every running agent has a redactor of its own; the search is as fast for a handful
        // of values (a SIMD prefilter finds the candidates).
        let finder = (!secrets.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .build(secrets.iter().map(|secret| &secret.value))
                    .ok()
            })
            .flatten();
        Redactor { secrets: Arc::new(Secrets { list: secrets, finder }) }
    }

    /// How many configured values this redactor masks (besides the token shapes).
    pub fn secret_count(&self) -> usize {
        self.secrets.list.len()
    }

    /// `text` without terminal escape sequences, with every configured value and every known
    /// token shape masked; borrowed when there was nothing to change.
    pub fn redact_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match crate::coders::diagnose::strip_ansi(text) {
            Cow::Borrowed(plain) => self.mask(plain),
            Cow::Owned(plain) => Cow::Owned(self.mask(&plain).into_owned()),
        }
    }

    /// Whether the JSON document `text` needs no masking at all, told from its text without
    /// building it: no key has a secret name ([`is_secret_name`]), and its text with the
    /// escapes of its strings decoded holds no configured value and no token shape. Decoding
    /// matters: in `"a\\nghp_…"` the token starts a word only once `\\n` is a line break. Text
    /// with a `\\u` escape (a control character such as a colour code's ESC, which
    /// [`Redactor::redact_text`] removes) or a key holding an escape is never judged clean. A
    /// `true` saves decoding the document to redact it with [`Redactor::redact_json`].
    pub fn is_clean_json_text(&self, text: &str) -> bool {
        self.clean_json(text).is_some()
    }

    /// The JSON document `text` as the plain text [`Redactor::is_clean_json_text`] judges (its
    /// strings' escapes decoded), when it is clean; `None` when it may need masking.
    pub fn clean_json<'t>(&self, text: &'t str) -> Option<PlainJson<'t>> {
        PlainJson::decode(text).filter(|json| self.is_clean_text(&json.plain))
    }

    /// Whether [`Redactor::redact_text`] leaves `text` as it is: no terminal escape, no
    /// configured value, no token shape. Told without building the redacted text (every line
    /// an agent prints is judged).
    pub fn is_clean_text(&self, text: &str) -> bool {
        !crate::coders::diagnose::holds_terminal_escape(text)
            && !self.holds_value(text)
            && token_shapes(text).next().is_none()
    }

    /// Whether `text` holds a configured value.
    fn holds_value(&self, text: &str) -> bool {
        match &self.secrets.finder {
            Some(finder) => finder.is_match(text),
            None => self.secrets.list.iter().any(|secret| text.contains(&secret.value)),
        }
    }

    /// The secrets `text` holds, each as its marker (`sk-ant-<redacted>`,
    /// `<redacted:OPENAI_API_KEY>`), without repeats; empty when it holds none.
    pub fn secrets_in(&self, text: &str) -> Vec<String> {
        let Cow::Owned(masked) = self.mask(text) else { return Vec::new() };
        let mut found: Vec<String> = Vec::new();
        let words = masked.split(|c: char| c.is_whitespace() || c == '"' || c == '\'');
        for word in words.filter(|word| word.contains("<redacted")) {
            let end = word.rfind('>').map_or(word.len(), |at| at + 1);
            let marker = &word[..end];
            if !found.iter().any(|known| known == marker) {
                found.push(marker.to_owned());
            }
        }
        found
    }

    /// `text` with every configured value and every known token shape masked, and nothing
    /// else changed (terminal escapes stay: text a person stores keeps its bytes, and is
    /// escaped when shown).
    pub fn mask_secrets<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.mask(text)
    }

    /// `text` with every configured value and every known token shape masked.
    fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let masked = self.mask_values(text);
        match mask_token_shapes(&masked) {
            Some(clean) => Cow::Owned(clean),
            None => masked,
        }
    }

    /// Redacts a JSON document in place, in objects and arrays at any depth: the value under a
    /// secret-looking key ([`is_secret_name`]) becomes `"<redacted>"` unless it is a number or
    /// null (token counts stay readable), and every other string goes through
    /// [`Redactor::redact_text`].
    pub fn redact_json(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map.iter_mut() {
                    if is_secret_name(key) && !inner.is_null() && !inner.is_number() {
                        *inner = Value::String(REDACTED.to_owned());
                    } else {
                        self.redact_json(inner);
                    }
                }
                // A key can be a secret too (a token used as a map key): mask it, keeping the
                // order of the entries.
                if map.keys().any(|key| matches!(self.redact_text(key), Cow::Owned(_))) {
                    let entries = std::mem::take(map);
                    for (key, inner) in entries {
                        let mut key = self.redact_text(&key).into_owned();
                        // Two keys masked alike both stay.
                        let base_len = key.len();
                        let mut n = 1;
                        while map.contains_key(&key) {
                            n += 1;
                            key.truncate(base_len);
                            key.push_str(&format!(" ({n})"));
                        }
                        map.insert(key, inner);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item)),
            Value::String(text) => {
                if let Cow::Owned(clean) = self.redact_text(text) {
                    *text = clean;
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Replaces every occurrence of a configured value. Overlapping matches are merged, so no
    /// part of either value survives.
    fn mask_values<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut found = self.value_matches(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        // At one start the longer value (listed first) wins.
        found.sort_unstable();
        let found = found.into_iter().map(|(start, index)| {
            let secret = &self.secrets.list[index];
            (start, start + secret.value.len(), secret.marker.as_str())
        });
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut matches = found.peekable();
        while let Some((start, mut end, marker)) = matches.next() {
            while let Some(&(next_start, next_end, _)) = matches.peek() {
                if next_start >= end {
                    break;
                }
                end = end.max(next_end);
                matches.next();
            }
            out.push_str(&text[copied..start]);
            out.push_str(marker);
            copied = end;
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }

    /// Every occurrence of every configured value, overlapping ones too, as (start, index in
    /// the list).
    fn value_matches(&self, text: &str) -> Vec<(usize, usize)> {
        let list = &self.secrets.list;
        match &self.secrets.finder {
            Some(finder) => finder
                .find_overlapping_iter(text)
                .map(|hit| (hit.start(), hit.pattern().as_usize()))
                .collect(),
            None => list
                .iter()
                .enumerate()
                .flat_map(|(index, secret)| {
                    text.match_indices(secret.value.as_str()).map(move |(at, _)| (at, index))
                })
                .collect(),
        }
    }
}

// --- JSON text ------------------------------------------------------------------------------

/// A JSON document's text with the escapes of its strings decoded and everything else as it
/// is, for scanning as plain text, and where each of its strings lies in that text.
#[derive(Debug, Clone)]
pub struct PlainJson<'t> {
    plain: Cow<'t, str>,
    /// The strings' contents (keys too), as ranges of `plain`; each lies between two quotes.
    strings: Vec<std::ops::Range<usize>>,
}

impl<'t> PlainJson<'t> {
    /// `text` decoded; `None` when a key has a secret name or an escape, a string has a `\\u`
    /// escape, or a string does not end.
    fn decode(text: &'t str) -> Option<PlainJson<'t>> {
        let bytes = text.as_bytes();
        let mut decoded: Option<String> = None;
        // An agent's line holds a few dozen strings.
        let mut strings = Vec::with_capacity(32);
        let (mut copied, mut at) = (0, 0);
        while let Some(quote) = memchr::memchr(b'"', &bytes[at..]) {
            let start = at + quote + 1;
            let (end, escaped) = string_end(bytes, start)?;
            let is_key = bytes[end + 1..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b':');
            if is_key && (escaped || is_secret_name(&text[start..end])) {
                return None;
            }
            match (&mut decoded, escaped) {
                (None, false) => strings.push(start..end),
                (Some(out), false) => {
                    out.push_str(&text[copied..end]);
                    strings.push(out.len() - (end - start)..out.len());
                    copied = end;
                }
                (_, true) => {
                    let out = decoded.get_or_insert_with(|| String::with_capacity(text.len()));
                    out.push_str(&text[copied..start]);
                    let from = out.len();
                    unescape_into(&text[start..end], out)?;
                    strings.push(from..out.len());
                    copied = end;
                }
            }
            at = end + 1;
        }
        let plain = match decoded {
            Some(mut out) => {
                out.push_str(&text[copied..]);
                Cow::Owned(out)
            }
            None => Cow::Borrowed(text),
        };
        Some(PlainJson { plain, strings })
    }

    /// The decoded text.
    pub fn plain(&self) -> &str {
        &self.plain
    }

    /// Whether `text` is the whole contents of one of the document's strings.
    pub fn holds_string(&self, text: &str) -> bool {
        let plain = self.plain.as_bytes();
        self.strings
            .iter()
            .any(|range| range.len() == text.len() && &plain[range.clone()] == text.as_bytes())
    }

    /// The same, owning its text.
    pub fn into_owned(self) -> PlainJson<'static> {
        PlainJson { plain: Cow::Owned(self.plain.into_owned()), strings: self.strings }
    }
}

/// The closing quote of the JSON string whose contents begin at `start`, and whether the
/// string holds an escape; `None` if it does not end.
fn string_end(bytes: &[u8], start: usize) -> Option<(usize, bool)> {
    let (mut at, mut escaped) = (start, false);
    loop {
        at += memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        if bytes[at] == b'"' {
            return Some((at, escaped));
        }
        escaped = true;
        at += 2;
    }
}

/// Appends the contents of a JSON string, `escaped`, to `out` decoded; `None` at a `\\u`
/// escape (or one JSON does not have).
fn unescape_into(escaped: &str, out: &mut String) -> Option<()> {
    let mut rest = escaped;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        out.push(match rest.as_bytes().get(at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            _ => return None,
        });
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    Some(())
}

// --- secret names ---------------------------------------------------------------------------

/// Whole words that make a name secret.
const SECRET_WORDS: [&str; 13] = [
    "key",
    "token",
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
    "auth",
    "authorization",
    "authn",
];

/// Endings that make a run-together word secret (`apikey`, `accesstoken`, `clientsecret`).
const SECRET_ENDINGS: [&str; 9] = [
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "authkey",
    "token",
    "secret",
    "password",
    "passwd",
];

/// Words that say the value is where a secret lives, not the secret (`SSH_AUTH_SOCK`,
/// `KEY_FILE`).
const LOCATION_WORDS: [&str; 6] = ["sock", "socket", "path", "file", "dir", "directory"];

/// Whether a variable or JSON key names a secret, case-insensitively.
///
/// The name is split into words at `_`, `-`, `.` and other punctuation, and where a lower-case
/// letter or digit meets an upper-case one (`apiKey`). It is secret when one word is `key`,
/// `token`, `secret(s)`, `password(s)`, `passwd`, `passphrase`, `credential(s)`, `auth`,
/// `authorization` or `authn`, or ends in `token`, `secret`, `password`, `passwd`, `apikey`,
/// `accesskey`, `secretkey`, `privatekey` or `authkey` — and no word is `sock`, `socket`,
/// `path`, `file`, `dir` or `directory`. So `OPENAI_API_KEY`, `GITHUB_TOKEN`, `apiKey`,
/// `x-api-key`, `Authorization` and `DB_PASSWORD` are secret; `AUTHOR`, `GIT_AUTHOR_NAME`,
/// `KEYBOARD`, `MONKEY`, `input_tokens`, `SSH_AUTH_SOCK` and `KEY_FILE` are not.
pub fn is_secret_name(name: &str) -> bool {
    // Every line an agent prints has its keys judged, and they are the same few keys again and
    // again: their verdicts are remembered (per thread, a bounded number of short names).
    thread_local! {
        static VERDICTS: std::cell::RefCell<foldhash::HashMap<Box<str>, bool>> =
            std::cell::RefCell::default();
    }
    const REMEMBERED_NAMES: usize = 1024;
    const REMEMBERED_LEN: usize = 64;
    if name.len() > REMEMBERED_LEN {
        return judge_name(name);
    }
    VERDICTS.with_borrow_mut(|verdicts| {
        if let Some(&verdict) = verdicts.get(name) {
            return verdict;
        }
        if verdicts.len() >= REMEMBERED_NAMES {
            verdicts.clear();
        }
        let verdict = judge_name(name);
        verdicts.insert(name.into(), verdict);
        verdict
    })
}

/// [`is_secret_name`], judged afresh.
fn judge_name(name: &str) -> bool {
    // Most names have no stem, and most words of those that do are not secret: the word
    // lists are only compared with words that hold a stem, and the location words only once a
    // name is found secret.
    has_secret_stem(name)
        && name_words(name).any(is_secret_word)
        && !name_words(name).any(|word| LOCATION_WORDS.iter().any(|w| word.eq_ignore_ascii_case(w)))
}

/// Whether one word of a name is a secret word or ends in a secret ending.
fn is_secret_word(word: &str) -> bool {
    let ends =
        |e: &&str| word.len() >= e.len() && word[word.len() - e.len()..].eq_ignore_ascii_case(e);
    has_secret_stem(word)
        && (SECRET_WORDS.iter().any(|w| word.eq_ignore_ascii_case(w))
            || SECRET_ENDINGS.iter().any(ends))
}

/// Whether `name` holds a stem of three letters that every secret word and ending holds
/// (`key`, `tok`en, `sec`ret, `pas`sword, `cre`dential, `aut`h), in any case: a name without
/// one is not secret, told without splitting it into words (most keys of an agent's output
/// are judged so).
fn has_secret_stem(name: &str) -> bool {
    name.as_bytes().windows(3).any(|three| {
        // `| 0x20` lower-cases an ASCII letter and turns no other byte into one.
        let lower = [three[0] | 0x20, three[1] | 0x20, three[2] | 0x20];
        matches!(&lower, b"key" | b"tok" | b"sec" | b"pas" | b"cre" | b"aut")
    })
}

/// The words of a name, as slices of it (no copy: names are judged for every key of every line
/// an agent prints): split at non-alphanumerics and where a lower-case letter or a digit meets
/// an upper-case one.
fn name_words(name: &str) -> impl Iterator<Item = &str> {
    let bytes = name.as_bytes();
    let mut start = 0;
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let b = bytes[at];
            if !b.is_ascii_alphanumeric() {
                // Bytes of other characters split words too; `get` is empty inside one.
                let word = name.get(start..at).unwrap_or("");
                at += 1;
                start = at;
                if !word.is_empty() {
                    return Some(word);
                }
                continue;
            }
            let after_lower = at > start
                && (bytes[at - 1].is_ascii_lowercase() || bytes[at - 1].is_ascii_digit());
            if b.is_ascii_uppercase() && after_lower {
                let word = name.get(start..at).unwrap_or("");
                start = at;
                at += 1;
                return Some(word);
            }
            at += 1;
        }
        if start < bytes.len() {
            let word = name.get(start..).unwrap_or("");
            start = bytes.len();
            return Some(word);
        }
        None
    })
}

// --- token shapes ---------------------------------------------------------------------------

/// A token shape found at some position: where it ends and what replaces it.
struct Found {
    end: usize,
    replacement: String,
}

/// Masks every token shape in `text`; `None` if there was none.
fn mask_token_shapes(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    for (at, found) in token_shapes(text) {
        let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(&text[copied..at]);
        out.push_str(&found.replacement);
        copied = found.end;
    }
    out.map(|mut out| {
        out.push_str(&text[copied..]);
        out
    })
}

/// How every token shape of [`token_at`] but the authorization ones begins, case and all:
/// `sk-`, `github_pat_` and the `gh…_` prefixes, `AKIA`/`ASIA`, `AIza`, `xox…-`, `eyJ`. Each is
/// made of word bytes only ([`is_word_byte`]), so a token, which starts a word, never starts
/// inside another prefix's match.
const TOKEN_STARTS: [&str; 16] = [
    "sk-",
    "github_pat_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "AKIA",
    "ASIA",
    "AIza",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxr-",
    "xoxs-",
    "eyJ",
];

/// The authorization schemes whose credentials are masked, matched in any case.
const AUTH_SCHEMES: [&str; 2] = ["bearer", "basic"];

/// Where a token shape may start, found in one pass each: the exact prefixes (a SIMD search
/// for a few bytes at once) and the schemes in any case (a search for their first byte). Most
/// text holds none, and is then looked at once.
struct TokenStartFinder {
    prefixes: AhoCorasick,
    schemes: AhoCorasick,
}

static TOKEN_START_FINDER: LazyLock<TokenStartFinder> = LazyLock::new(|| {
    let finder = |patterns: &[&str], any_case: bool| {
        AhoCorasick::builder()
            .ascii_case_insensitive(any_case)
            .match_kind(MatchKind::LeftmostFirst)
            .build(patterns)
            .expect("a few short constant patterns are within the automaton's limits")
    };
    TokenStartFinder {
        prefixes: finder(&TOKEN_STARTS, false),
        schemes: finder(&AUTH_SCHEMES, true),
    }
});

/// Every token shape in `text`, in order, as where it starts and what replaces it. Tokens
/// start only at a word start (an ASCII letter or digit not preceded by a letter, digit, `_`
/// or `-`) with one of [`TOKEN_STARTS`] or [`AUTH_SCHEMES`].
fn token_shapes(text: &str) -> impl Iterator<Item = (usize, Found)> + '_ {
    let bytes = text.as_bytes();
    let finder = &*TOKEN_START_FINDER;
    // The next place each finder found at or after `from` (`None`: none left).
    let next = |automaton: &AhoCorasick, from: usize| {
        automaton.find(Input::new(text).range(from..)).map(|hit| hit.start())
    };
    let mut from = 0;
    let mut prefix = next(&finder.prefixes, 0);
    let mut scheme = next(&finder.schemes, 0);
    std::iter::from_fn(move || {
        loop {
            if prefix.is_some_and(|at| at < from) {
                prefix = next(&finder.prefixes, from);
            }
            if scheme.is_some_and(|at| at < from) {
                scheme = next(&finder.schemes, from);
            }
            let at = prefix.into_iter().chain(scheme).min()?;
            from = at + 1;
            if starts_word(bytes, at)
                && let Some(found) = token_at(text, at)
            {
                from = found.end;
                return Some((at, found));
            }
        }
    })
}

/// The token shape starting at `at`, if any (the checks are cheap prefix tests first).
fn token_at(text: &str, at: usize) -> Option<Found> {
    let bytes = text.as_bytes();
    openai_or_anthropic_key(bytes, at)
        .or_else(|| github_token(bytes, at))
        .or_else(|| aws_access_key_id(bytes, at))
        .or_else(|| google_api_key(bytes, at))
        .or_else(|| slack_token(bytes, at))
        .or_else(|| jwt(bytes, at))
        .or_else(|| authorization_credentials(text, at))
}

/// `sk-ant-…` and `sk-proj-…` (16+ characters after the prefix), or `sk-…` (20+ characters
/// with at least one digit, so `sk-learn-compatible-estimators` is prose).
fn openai_or_anthropic_key(bytes: &[u8], at: usize) -> Option<Found> {
    const SHAPES: [(&str, usize, bool); 3] =
        [("sk-ant-", 16, false), ("sk-proj-", 16, false), ("sk-", 20, true)];
    SHAPES.iter().find_map(|&(prefix, min, needs_digit)| {
        let body = at + prefix_len(bytes, at, prefix)?;
        let len = run(bytes, body, is_base64url_byte);
        let digits_ok = !needs_digit || bytes[body..body + len].iter().any(u8::is_ascii_digit);
        (len >= min && digits_ok).then(|| marked(body + len, prefix))
    })
}

/// `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 20+ letters and digits; `github_pat_` + 20+
/// letters, digits and underscores.
fn github_token(bytes: &[u8], at: usize) -> Option<Found> {
    if let Some(skip) = prefix_len(bytes, at, "github_pat_") {
        let len = run(bytes, at + skip, |b| b.is_ascii_alphanumeric() || b == b'_');
        return (len >= 20).then(|| marked(at + skip + len, "github_pat_"));
    }
    let prefix = ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]
        .into_iter()
        .find(|prefix| prefix_len(bytes, at, prefix).is_some())?;
    let len = run(bytes, at + prefix.len(), |b| b.is_ascii_alphanumeric());
    (len >= 20).then(|| marked(at + prefix.len() + len, prefix))
}

/// `AKIA`/`ASIA` + exactly 16 upper-case letters and digits, then a word end.
fn aws_access_key_id(bytes: &[u8], at: usize) -> Option<Found> {
    let prefix = ["AKIA", "ASIA"].into_iter().find(|p| prefix_len(bytes, at, p).is_some())?;
    let body = at + prefix.len();
    let len = run(bytes, body, |b| b.is_ascii_uppercase() || b.is_ascii_digit());
    (len == 16 && ends_word(bytes, body + len)).then(|| marked(body + len, prefix))
}

/// `AIza` + exactly 35 of `[A-Za-z0-9_-]`, then a word end.
fn google_api_key(bytes: &[u8], at: usize) -> Option<Found> {
    let body = at + prefix_len(bytes, at, "AIza")?;
    let len = run(bytes, body, is_base64url_byte);
    (len == 35 && ends_word(bytes, body + len)).then(|| marked(body + len, "AIza"))
}

/// `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-` + 10+ letters, digits and dashes, with a digit
/// (Slack tokens are dash-separated numbers and a random part).
fn slack_token(bytes: &[u8], at: usize) -> Option<Found> {
    let prefix = ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"]
        .into_iter()
        .find(|prefix| prefix_len(bytes, at, prefix).is_some())?;
    let body = at + prefix.len();
    let len = run(bytes, body, |b| b.is_ascii_alphanumeric() || b == b'-');
    let has_digit = bytes[body..body + len].iter().any(u8::is_ascii_digit);
    (len >= 10 && has_digit).then(|| marked(body + len, prefix))
}

/// A JSON Web Token: `eyJ…` `.` `eyJ…` `.` signature — a base64url header and payload of
/// 10+ characters each (both JSON objects, hence `eyJ`), and a possibly empty signature.
fn jwt(bytes: &[u8], at: usize) -> Option<Found> {
    let segment = |from: usize| {
        prefix_len(bytes, from, "eyJ")?;
        let len = run(bytes, from, is_base64url_byte);
        (len >= 10 && bytes.get(from + len) == Some(&b'.')).then_some(from + len + 1)
    };
    let payload = segment(at)?;
    let signature = segment(payload)?;
    let end = signature + run(bytes, signature, is_base64url_byte);
    Some(Found { end, replacement: "<redacted:jwt>".to_owned() })
}

/// `Bearer <token>` or `Basic <base64>`, the scheme in any case (as in an `Authorization:`
/// header). The scheme and its spacing stay; the credentials become `<redacted>`.
///
/// A bearer token needs 8+ characters and a digit (or 20+ characters mixing upper and lower
/// case), so "Bearer authentication" is prose. Basic credentials must be padded base64 that
/// decodes to `user:password`.
fn authorization_credentials(text: &str, at: usize) -> Option<Found> {
    let bytes = text.as_bytes();
    let scheme_len = run(bytes, at, |b| b.is_ascii_alphabetic());
    let scheme = &text[at..at + scheme_len];
    let is_bearer = scheme.eq_ignore_ascii_case("bearer");
    if !is_bearer && !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let spaces = run(bytes, at + scheme_len, |b| b == b' ' || b == b'\t');
    if spaces == 0 {
        return None;
    }
    let token_at = at + scheme_len + spaces;
    let token_len = if is_bearer {
        bearer_token_len(bytes, token_at)?
    } else {
        basic_credentials_len(bytes, token_at)?
    };
    let replacement = format!("{}{REDACTED}", &text[at..token_at]);
    Some(Found { end: token_at + token_len, replacement })
}

/// The length of a plausible bearer token (RFC 6750 `b64token`) at `at`.
fn bearer_token_len(bytes: &[u8], at: usize) -> Option<usize> {
    let is_token_byte = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b);
    let mut len = run(bytes, at, is_token_byte);
    // A full stop after the token ends the sentence; it is not part of the token.
    while len > 0 && bytes[at + len - 1] == b'.' {
        len -= 1;
    }
    let token = &bytes[at..at + len];
    let has = |test: fn(&u8) -> bool| token.iter().any(test);
    let plausible = has(u8::is_ascii_digit)
        || (len >= 20 && has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase));
    if len < 8 || !plausible {
        return None;
    }
    Some(len + run(bytes, at + len, |b| b == b'='))
}

/// The length of `Basic` credentials at `at`: padded base64 of `user:password`.
fn basic_credentials_len(bytes: &[u8], at: usize) -> Option<usize> {
    let body = run(bytes, at, |b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    let padding = run(bytes, at + body, |b| b == b'=').min(2);
    let len = body + padding;
    if len < 8 || len % 4 != 0 {
        return None;
    }
    let decoded = decode_base64(&bytes[at..at + len])?;
    let text = std::str::from_utf8(&decoded).ok()?;
    let looks_like_credentials = text.contains(':') && !text.chars().any(char::is_control);
    looks_like_credentials.then_some(len)
}

/// Decodes padded standard base64; `None` if it is not.
fn decode_base64(encoded: &[u8]) -> Option<Vec<u8>> {
    fn sextet(b: u8) -> Option<u32> {
        let value = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        Some(u32::from(value))
    }
    let mut out = Vec::with_capacity(encoded.len() / 4 * 3);
    for chunk in encoded.chunks(4) {
        let padding = chunk.iter().rev().take_while(|&&b| b == b'=').count();
        let mut group = 0u32;
        for &b in &chunk[..chunk.len() - padding] {
            group = (group << 6) | sextet(b)?;
        }
        group <<= 6 * padding;
        let [_, a, b, c] = group.to_be_bytes();
        out.extend_from_slice(&[a, b, c][..3 - padding]);
    }
    Some(out)
}

/// A replacement that keeps the public prefix: `ghp_<redacted>`.
fn marked(end: usize, prefix: &str) -> Found {
    Found { end, replacement: format!("{prefix}{REDACTED}") }
}

/// `Some(prefix.len())` if `bytes` has `prefix` at `at`.
fn prefix_len(bytes: &[u8], at: usize, prefix: &str) -> Option<usize> {
    bytes[at..].starts_with(prefix.as_bytes()).then_some(prefix.len())
}

/// How many bytes from `from` on satisfy `test`.
fn run(bytes: &[u8], from: usize, test: impl Fn(u8) -> bool) -> usize {
    bytes.get(from..).map_or(0, |rest| rest.iter().take_while(|&&b| test(b)).count())
}

/// Bytes that continue a word (so a token cannot start right after one).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn is_base64url_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn starts_word(bytes: &[u8], at: usize) -> bool {
    bytes[at].is_ascii_alphanumeric() && (at == 0 || !is_word_byte(bytes[at - 1]))
}

fn ends_word(bytes: &[u8], at: usize) -> bool {
    bytes.get(at).is_none_or(|&b| !is_word_byte(b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_used_as_json_keys_are_masked() {
        let github = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
        let other = "ghp_zB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY9";
        let redactor = super::Redactor::from_env([("DEPLOY_TOKEN", "correct-horse-battery")]);
        let mut value = serde_json::json!({
            "a": 1,
            github: {"correct-horse-battery": [ {other: "x"} ]},
            other: 2,
            "z": 3,
        });
        redactor.redact_json(&mut value);
        let text = value.to_string();
        for secret in [github, other, "correct-horse-battery"] {
            assert!(!text.contains(secret), "{text}");
        }
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "ghp_<redacted>", "ghp_<redacted> (2)", "z"], "order kept: {text}");
        assert_eq!(value["ghp_<redacted>"]["<redacted:DEPLOY_TOKEN>"][0]["ghp_<redacted>"], "x");
        assert_eq!(value["ghp_<redacted> (2)"], 2);
    }

    use super::*;

    #[test]
    fn colour_codes_are_removed_and_cannot_hide_a_key() {
        let redactor = Redactor::default();
        assert_eq!(redactor.redact_text("\u{1b}[31mError:\u{1b}[0m boom"), "Error: boom");
        let hidden = "key \u{1b}[1msk-proj-abcdefghijklmnopqrstuvwxyz0123456789\u{1b}[0m";
        assert!(!redactor.redact_text(hidden).contains("abcdefghijklmnop"));
    }

    fn shapes(text: &str) -> String {
        Redactor::default().redact_text(text).into_owned()
    }

    fn unchanged(text: &str) {
        let redacted = Redactor::default().redact_text(text);
        assert!(matches!(redacted, Cow::Borrowed(_)), "{text:?} became {redacted:?}");
    }

    const GHP: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";

    #[test]
    fn anthropic_and_openai_keys_keep_only_their_prefix() {
        assert_eq!(
            shapes("key=sk-ant-api03-AbCdEf0123456789_xyz-QQ done"),
            "key=sk-ant-<redacted> done"
        );
        assert_eq!(shapes("sk-proj-AbCdEfGhIjKlMnOpQrSt"), "sk-proj-<redacted>");
        assert_eq!(shapes("\"sk-AbCdEfGh1jKlMnOpQrStUvWx\""), "\"sk-<redacted>\"");
    }

    #[test]
    fn github_tokens_are_masked() {
        assert_eq!(shapes(&format!("token {GHP}.")), "token ghp_<redacted>.");
        for prefix in ["gho_", "ghu_", "ghs_", "ghr_"] {
            let token = format!("{prefix}{}", &GHP[4..]);
            assert_eq!(shapes(&token), format!("{prefix}<redacted>"));
        }
        let pat = "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJ";
        assert_eq!(shapes(&format!("({pat})")), "(github_pat_<redacted>)");
    }

    #[test]
    fn aws_access_key_ids_are_masked() {
        assert_eq!(shapes("id: AKIAIOSFODNN7EXAMPLE,"), "id: AKIA<redacted>,");
        assert_eq!(shapes("ASIAY34FZKBOKMUTVV7A"), "ASIA<redacted>");
        unchanged("AKIAIOSFODNN7EXAMPLEXX");
    }

    #[test]
    fn slack_and_google_tokens_are_masked() {
        assert_eq!(
            shapes("SLACK=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp"),
            "SLACK=xoxb-<redacted>"
        );
        for prefix in ["xoxp-", "xoxa-", "xoxr-", "xoxs-"] {
            assert_eq!(shapes(&format!("{prefix}1234567890-abc")), format!("{prefix}<redacted>"));
        }
        assert_eq!(
            shapes("key=AIzaSyA1b2C3d4E5f6G7h8I9j0K_l-M2n3O4p5Q end"),
            "key=AIza<redacted> end"
        );
    }

    #[test]
    fn jwts_are_masked_whole() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(shapes(&format!("cookie={jwt}; path=/")), "cookie=<redacted:jwt>; path=/");
    }

    #[test]
    fn bearer_and_basic_credentials_are_masked_in_any_case() {
        assert_eq!(
            shapes("Authorization: Bearer abc123DEF456ghi789"),
            "Authorization: Bearer <redacted>"
        );
        assert_eq!(
            shapes("authorization: bearer 0123456789abcdef."),
            "authorization: bearer <redacted>."
        );
        // base64("aladdin:opensesame")
        assert_eq!(
            shapes("Authorization: BASIC YWxhZGRpbjpvcGVuc2VzYW1l"),
            "Authorization: BASIC <redacted>"
        );
    }

    #[test]
    fn configured_values_are_masked_anywhere_with_their_name() {
        let redactor = Redactor::from_env([
            ("MY_SERVICE_TOKEN", "hunter2hunter2"),
            ("DB_PASSWORD", "correct horse battery"),
            ("HOME", "/home/someone"),
            ("SHORT_SECRET", "1234567"),
        ]);
        assert_eq!(redactor.secret_count(), 2);
        assert_eq!(
            redactor
                .redact_text("login xhunter2hunter2x with correct horse battery at /home/someone"),
            "login x<redacted:MY_SERVICE_TOKEN>x with <redacted:DB_PASSWORD> at /home/someone"
        );
        assert_eq!(redactor.redact_text("1234567 stays"), "1234567 stays");
    }

    #[test]
    fn overlapping_values_leave_nothing_behind() {
        let redactor = Redactor::new(["AAAABBBBCC".to_owned(), "BBBBCCCCDD".to_owned()]);
        assert_eq!(redactor.redact_text("x AAAABBBBCCCCDD y"), "x <redacted> y");
        assert_eq!(redactor.redact_text("AAAABBBBCC"), "<redacted>");
    }

    #[test]
    fn debug_output_never_shows_values() {
        let redactor = Redactor::new(["supersecretvalue".to_owned()]);
        assert!(!format!("{redactor:?}").contains("supersecret"));
    }

    #[test]
    fn ordinary_prose_ids_and_paths_are_left_alone() {
        for text in [
            "task-1 and fl-3k2 are done; sk-1 is short",
            "the skeleton of sk-learn-compatible-estimators",
            "/home/user/projects/ghp_notes/README.md",
            "Bearer authentication uses a bearer token. Basic usage: basic question",
            "AKIA is a prefix; ASIAN markets; AIza alone",
            "xoxb- and xoxbot-something, eyJ alone, e.g. eyJhbGciOiJ",
            "input_tokens=12345 max_tokens=8192 cache_read_input_tokens=0",
            "sha 3f2a9c1e8b7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d and uuid 123e4567-e89b-12d3-a456-426614174000",
            "",
            "unicode ✓ — naïve café ghp_ short",
        ] {
            unchanged(text);
        }
        // Mid-word look-alikes do not start a token.
        unchanged("mask-sk-AbCdEfGh1jKlMnOpQrStUvWx xAKIAIOSFODNN7EXAMPLE");
    }

    #[test]
    fn names_with_other_characters_are_judged_without_a_panic() {
        assert!(is_secret_name("clé_API_KEY"));
        assert!(!is_secret_name("ké"));
        assert!(!is_secret_name("日本語"));
        assert!(is_secret_name("токен_TOKEN"));
    }

    #[test]
    fn secret_names_follow_the_documented_rule() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "MYSQL_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "NPM_AUTH",
            "api_key",
            "apiKey",
            "x-api-key",
            "Authorization",
            "access_token",
            "accessToken",
            "client_secret",
            "APIKEY",
            "auth_token",
        ] {
            assert!(is_secret_name(name), "{name} should be secret");
        }
        for name in [
            "AUTHOR",
            "GIT_AUTHOR_NAME",
            "KEYBOARD",
            "MONKEY",
            "input_tokens",
            "max_tokens",
            "SSH_AUTH_SOCK",
            "KEY_FILE",
            "PATH",
            "PWD",
            "HOME",
            "",
        ] {
            assert!(!is_secret_name(name), "{name} should not be secret");
        }
    }

    #[test]
    fn json_keys_and_strings_are_redacted_at_any_depth_but_counts_survive() {
        let redactor = Redactor::from_env([("SERVICE_TOKEN", "s3cr3t-value-here")]);
        let mut doc = serde_json::json!({
            "usage": {"input_tokens": 5, "token_count": 7, "cache_read_input_tokens": 2},
            "env": [{"OPENAI_API_KEY": "abc"}, {"auth_token": "xyz"}, {"password": null}],
            "headers": {"Authorization": "Bearer abcdefgh12345678"},
            "message": {"content": [{"text": format!("use {GHP} and s3cr3t-value-here")}]}
        });
        redactor.redact_json(&mut doc);
        assert_eq!(doc["usage"]["input_tokens"], 5);
        assert_eq!(doc["usage"]["token_count"], 7);
        assert_eq!(doc["env"][0]["OPENAI_API_KEY"], REDACTED);
        assert_eq!(doc["env"][1]["auth_token"], REDACTED);
        assert!(doc["env"][2]["password"].is_null());
        assert_eq!(doc["headers"]["Authorization"], REDACTED);
        assert_eq!(
            doc["message"]["content"][0]["text"],
            "use ghp_<redacted> and <redacted:SERVICE_TOKEN>"
        );
    }

    #[test]
    fn every_secret_word_and_ending_holds_a_stem() {
        for word in SECRET_WORDS.iter().chain(&SECRET_ENDINGS) {
            assert!(has_secret_stem(word), "{word} has no stem: names with it would pass");
            assert!(has_secret_stem(&word.to_uppercase()), "{word} in upper case");
        }
        for plain in ["input_tokens_", "model", "session_id", "K\u{5}Y", "[EY", "ke"] {
            assert_eq!(has_secret_stem(plain), plain.contains("tok"), "{plain:?}");
        }
    }

    #[test]
    fn json_text_is_clean_only_when_its_decoded_strings_and_keys_are() {
        let redactor = Redactor::from_env([("SERVICE_TOKEN", "s3cr3t\"value")]);
        let clean = |doc: serde_json::Value| redactor.is_clean_json_text(&doc.to_string());
        assert!(clean(serde_json::json!({"usage": {"input_tokens": 5}, "text": "a \"b\"\n\\c"})));
        for hidden in [
            format!("line\n{GHP}"),
            format!("tab\t{GHP}"),
            format!("\\{GHP}"),
            format!("\u{1b}[1m{GHP}"),
            "quoted s3cr3t\"value".to_owned(),
        ] {
            assert!(!clean(serde_json::json!({ "text": hidden })), "{hidden:?}");
        }
        assert!(!clean(serde_json::json!({"nested": [{"apiKey": 1}]})));
        assert!(!clean(serde_json::json!({"odd\"key": "x"})), "keys with escapes are not judged");
        assert!(!redactor.is_clean_json_text(r#"{"text": "never ends}"#));
    }

    #[test]
    fn json_text_is_decoded_string_by_string() {
        let decoded = |text: &str| PlainJson::decode(text).map(|json| json.plain.into_owned());
        assert_eq!(decoded(r#"{"a":"plain","n":1}"#).as_deref(), Some(r#"{"a":"plain","n":1}"#));
        assert_eq!(
            decoded(r#"{"a":"x\ny \"q\" \\ \/","b":["\t"]}"#).as_deref(),
            Some("{\"a\":\"x\ny \"q\" \\ /\",\"b\":[\"\t\"]}")
        );
        assert_eq!(decoded(r#"{"a":"\u001b[0m"}"#), None, "\\u escapes are not judged");
        assert_eq!(decoded(r#"{"a\"b":1}"#), None, "keys with escapes are not judged");
        assert_eq!(decoded(r#"{"api_key" : 1}"#), None, "secret names are found as keys");
        assert_eq!(decoded(r#"{"a":"api_key"}"#).as_deref(), Some(r#"{"a":"api_key"}"#));
        assert_eq!(decoded(r#"{"a":"cut\"#), None);
        assert_eq!(decoded(r#"{"a":"cut"#), None);
        let json = PlainJson::decode(r#"{"a":"x\ny","b" : "plain","c":["q\"t", ""]}"#).unwrap();
        for whole in ["a", "x\ny", "b", "plain", "c", "q\"t", ""] {
            assert!(json.holds_string(whole), "{whole:?}");
        }
        for part in ["plai", "x", "\"t", "a\""] {
            assert!(!json.holds_string(part), "{part:?}");
        }
    }

    #[test]
    fn every_token_shape_begins_with_a_start_the_finder_looks_for() {
        for token in [
            "sk-ant-api03-abcdefghijklmnop",
            "sk-proj-abcdefghijklmnop",
            "sk-abcdefghijklmnopqrs1",
            GHP,
            "github_pat_11ABCDEFG0123456789abcdef",
            "AKIAIOSFODNN7EXAMPLE",
            "ASIAIOSFODNN7EXAMPLE",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "xoxb-123456789012-abcdef",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
            "Bearer abc123def456",
            "bearer abc123def456",
            "BEARER abc123def456",
            "Basic dXNlcjpwYXNzd29yZA==",
            "basic dXNlcjpwYXNzd29yZA==",
        ] {
            let begins = |start: &&str| {
                token.get(..start.len()).is_some_and(|head| head.eq_ignore_ascii_case(start))
            };
            assert!(
                TOKEN_STARTS.iter().any(|start| token.starts_with(start))
                    || AUTH_SCHEMES.iter().any(begins),
                "{token}"
            );
            assert_ne!(shapes(token), token, "{token} is a token shape");
            assert!(!shapes(&format!("(x {token}.)")).contains(&token[6..]), "{token} in prose");
        }
    }

    /// The token shapes of `text` by the rule itself: from each word start on, the first
    /// token, then on after it.
    fn token_shapes_by_rule(text: &str) -> Vec<(usize, usize)> {
        let bytes = text.as_bytes();
        let (mut found, mut at) = (Vec::new(), 0);
        while at < bytes.len() {
            match starts_word(bytes, at).then(|| token_at(text, at)).flatten() {
                Some(token) => {
                    found.push((at, token.end));
                    at = token.end;
                }
                None => at += 1,
            }
        }
        found
    }

    proptest::proptest! {
        /// The finder's scan finds what the rule finds, and a text is judged clean exactly
        /// when redaction leaves it as it is.
        #[test]
        fn the_scan_agrees_with_the_rule_and_the_clean_test_with_redaction(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "word", " ", "-", "_", ".", "x", "sk-", "SK-", "bEaReR ", "BASIC ", "akia", "Eyj", "ghp_", "github_pat_", "AKIA",
                "asia", "AIza", "xoxb-", "eyJ", "bearer ", "Basic ", "abcdefghij", "0123456789",
                "ABCDEFGHIJKLMNOP", "dXNlcjpwYXNzd29yZA==", "s3cr3t-value", "\u{1b}[0m",
            ]), 0..16),
        ) {
            let text = parts.concat();
            let scanned: Vec<(usize, usize)> =
                token_shapes(&text).map(|(at, found)| (at, found.end)).collect();
            proptest::prop_assert_eq!(scanned, token_shapes_by_rule(&text));
            let redactor = Redactor::new(["s3cr3t-value".to_owned()]);
            let unchanged = matches!(redactor.redact_text(&text), Cow::Borrowed(_));
            proptest::prop_assert_eq!(redactor.is_clean_text(&text), unchanged);
        }
    }

    proptest::proptest! {
        /// Whatever a document holds, a text judged clean is one redaction leaves unchanged.
        #[test]
        fn json_text_judged_clean_needs_no_redaction(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "word", " ", "\n", "\t", "\"", "\\", "/", "\u{1b}[0m", "\u{9b}", "é", "-", "_",
                "ghp_", "aB3dE5fG7hI9jK1lM3nO5pQ7", "sk-ant-", "Bearer ", "abcdefgh12345678",
                "s3cr3t-value", "api_key", "token",
            ]), 0..24),
            as_key in proptest::bool::ANY,
        ) {
            let redactor = Redactor::from_env([("SERVICE_TOKEN", "s3cr3t-value")]);
            let text: String = parts.concat();
            let mut doc = if as_key {
                serde_json::json!({ "raw": { text.clone(): "v" } })
            } else {
                serde_json::json!({ "raw": { "content": [text.clone()] } })
            };
            if redactor.is_clean_json_text(&doc.to_string()) {
                let before = doc.clone();
                redactor.redact_json(&mut doc);
                proptest::prop_assert_eq!(doc, before);
            }
        }
    }

    #[test]
    fn long_runs_of_token_lookalikes_are_skipped_word_by_word() {
        // Worst cases for a naive scanner: many token-like starts that never complete. With
        // a rescan at every byte this would take minutes; here each word is looked at once.
        let text =
            "eyJ-".repeat(50_000) + " " + &"sk-".repeat(50_000) + " " + &"xoxb-".repeat(20_000);
        let redacted = Redactor::new(["not-in-the-text".to_owned()]).redact_text(&text);
        assert!(matches!(redacted, Cow::Borrowed(_)));
    }

    #[test]
    fn redactors_are_cheap_to_share_across_threads() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<Redactor>();
    }
}
