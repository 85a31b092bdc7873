# Error reporting: `Error: <msg>` on stderr with exit 1; JSON errors with --json; usage errors.

run bd init --prefix test
run bd create "Exists" --silent
ID=$OUT

run bd show
expect_rc 1
expect_err '^Error: '
expect_out_empty

run bd show --json
expect_rc 1
expect_err '"error": ".*issue ID is required'
expect_err '"schema_version": 1'
expect_out_empty

run bd create --json
expect_rc 1
expect_err '"error": "title required'

run bd update "$ID" --priority 7 --json
expect_rc 1
expect_err '"error": "invalid priority'

# unknown flags and commands: exit 1, "Error:" on stderr
run bd create "x" --no-such-flag
expect_rc 1
expect_err '^Error: '
expect_err 'no-such-flag'
run bd frobnicate
expect_rc 1
expect_err '^Error: '

# read-only mode refuses writes but allows reads
run bd --readonly create "Nope"
expect_rc 1
expect_err 'read-only'
run bd --readonly list
expect_ok
expect_out "$ID"

# legacy switches are accepted and ignored
run bd --no-daemon --no-auto-flush --no-auto-import --sandbox list
expect_ok
expect_out "$ID"

# a self-dependency through --deps is refused and nothing is created
run bd count
BEFORE=$OUT
run bd dep add "$ID" "$ID"
expect_fail
expect_err 'cannot depend on itself'
run bd count
expect_same "$OUT" "$BEFORE"

# per-issue failures: the message on stderr and exit 1 when nothing changed; with --json no
# JSON is mixed into stderr (beads 1.0.5)
run env BD_ACTOR=first bd update "$ID" --claim
expect_ok
run env BD_ACTOR=second bd update "$ID" --claim --json
expect_rc 1
expect_err "^Error claiming $ID: issue already claimed by first$"
expect_no_err '"error"'
expect_out_empty
# an unknown id stops a close before anything closes: the error in place of the result
run bd close test-nope --json
expect_rc 1
expect_out '"error": "resolving ID test-nope: no issue found matching \\"test-nope\\""'
expect_err_empty
