//! What a failed git command says about its cause, and the hint that names that cause.
//!
//! git reports a remote that refuses the connection, a URL with no repository behind it, a
//! push the remote turned down and a failed sign-in each in its own words; [`Failure::of`]
//! reads them (git runs with `LC_ALL=C`, so the words are git's English ones) and
//! [`Failure::hint`] says what happened and what to do. A failure it does not recognise keeps
//! the general hint.

/// The cause of a failed git command, as far as its message tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Nothing listens at the remote's address (`connection refused`).
    Refused,
    /// The remote's host name does not resolve.
    UnknownHost,
    /// The network does not reach the host (no route, timed out).
    Unreachable,
    /// There is no repository at the URL (or a git daemon does not export it).
    NoRepository,
    /// The remote wants credentials it did not get, or turned them down.
    Authentication,
    /// The remote's copy of this replica's journal ref has batches this store never made: a
    /// second copy of the store pushes as the same replica.
    ReplicaClash,
    /// The remote turned a push down (a hook, a protected ref, no write permission).
    PushRejected,
    /// Anything else, on the way to or from a remote.
    OtherRemote,
    /// Anything else, in the local repository.
    Other,
}

impl Failure {
    /// Reads the cause from what was being done (`context`) and git's `message`.
    pub fn of(context: &str, message: &str) -> Failure {
        let text = message.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
        let own_ref_push = context.starts_with(&format!("pushing {}", super::REF_PREFIX));
        if own_ref_push && has(&["[rejected]", "non-fast-forward", "fetch first", "stale info"]) {
            return Failure::ReplicaClash;
        }
        if has(&["[remote rejected]", "pre-receive hook declined", "protected branch"]) {
            return Failure::PushRejected;
        }
        if has(&["connection refused"]) {
            return Failure::Refused;
        }
        if has(&["could not resolve host", "name or service not known", "name resolution"]) {
            return Failure::UnknownHost;
        }
        if has(&["network is unreachable", "no route to host", "timed out"]) {
            return Failure::Unreachable;
        }
        if has(&[
            "does not appear to be a git repository",
            "repository not found",
            "not exported",
            "no such repository",
            "not a git repository",
        ]) {
            return Failure::NoRepository;
        }
        if has(&[
            "authentication failed",
            "permission denied",
            "could not read username",
            "could not read password",
            "access denied",
        ]) {
            return Failure::Authentication;
        }
        if context.starts_with("fetching") || context.starts_with("pushing") {
            return Failure::OtherRemote;
        }
        Failure::Other
    }

    /// What happened and what to do about it.
    pub fn hint(self) -> &'static str {
        match self {
            Failure::Refused => {
                "the remote refused the connection: nothing listens at its address; start the git server there, or correct the host and port of its URL (`fleet remote list` shows it)"
            }
            Failure::UnknownHost => {
                "the remote's host name does not resolve: correct the URL's host (`fleet remote list` shows it) or check the network's name service"
            }
            Failure::Unreachable => {
                "the remote's host cannot be reached: check the network (and a VPN or firewall on the way); the next sync finishes the job"
            }
            Failure::NoRepository => {
                "there is no git repository at the remote's URL: create one there (`git init --bare PATH`; a git daemon must also export it), or correct the URL: `fleet remote remove NAME`, then `fleet remote add NAME URL`"
            }
            Failure::Authentication => {
                "the remote did not accept this machine's credentials: check that git can reach it on its own (`git ls-remote URL`), with the key or token it needs"
            }
            Failure::ReplicaClash => {
                "replica clash: the remote's journal of this replica has batches this store never made, so another copy of this store (a copied workspace, a restored backup or VM snapshot) syncs as the same replica; nothing here is lost: sync again, and this store takes a replica id of its own with its ops re-stamped"
            }
            Failure::PushRejected => {
                "the remote turned the push down (its reason is above): a hook or a rule there protects refs/fleet/, or this account may not write; refs/fleet/journal/* must be writable"
            }
            Failure::OtherRemote => {
                "git's message names the cause; check the remote's URL (`fleet remote list`) and that git reaches it on its own (`git ls-remote URL`)"
            }
            Failure::Other => {
                "check that the repository is readable and writable (`git fsck` can check it)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Failure;

    #[test]
    fn each_cause_is_read_from_gits_own_words() {
        let cases = [
            (
                "fetching the journal from remote origin (git://127.0.0.1:9/x.git)",
                "fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused",
                Failure::Refused,
            ),
            (
                "fetching the journal from remote origin (/tmp/x.git)",
                "fatal: '/tmp/x.git' does not appear to be a git repository\nfatal: Could not read from remote repository.",
                Failure::NoRepository,
            ),
            (
                "fetching the journal from remote origin (git://h/x.git)",
                "fatal: remote error: access denied or repository not exported: /x.git",
                Failure::NoRepository,
            ),
            (
                "pushing refs/fleet/journal/01abc to remote origin (/tmp/x.git)",
                "To /tmp/x.git\n!\trefs/fleet/journal/01abc:refs/fleet/journal/01abc\t[rejected] (fetch first)\nDone",
                Failure::ReplicaClash,
            ),
            (
                "pushing refs/fleet/journal/01abc to remote origin (/tmp/x.git)",
                "!\trefs/fleet/journal/01abc:refs/fleet/journal/01abc\t[remote rejected] (pre-receive hook declined)",
                Failure::PushRejected,
            ),
            (
                "fetching the journal from remote origin (https://h/x.git)",
                "fatal: could not read Username for 'https://h': terminal prompts disabled",
                Failure::Authentication,
            ),
            (
                "fetching the journal from remote origin (https://nohost.invalid/x.git)",
                "fatal: unable to access 'https://nohost.invalid/x.git/': Could not resolve host: nohost.invalid",
                Failure::UnknownHost,
            ),
            ("writing a blob in /x", "disk full", Failure::Other),
        ];
        for (context, message, cause) in cases {
            assert_eq!(Failure::of(context, message), cause, "{message}");
        }
    }
}
