# bd close and reopen: the success line, reasons, last-touched, guards, errors.

run bd init --prefix test

# nothing touched yet: no id is an error
run bd close
expect_fail
expect_err 'no issue ID provided'

run bd create "Finish me" --silent
ID=$OUT
run bd close "$ID"
expect_ok
expect_line 1 "✓ Closed $ID — Finish me: Closed"
expect_err_empty
run bd show "$ID"
expect_out '^Status: closed$'
expect_out '^Close reason: Closed$'

# closing again is a quiet success
run bd close "$ID"
expect_ok
expect_out "^✓ Closed $ID"

# reasons and their aliases
run bd create "With reason" --silent
R1=$OUT
run bd close "$R1" --reason "Done here"
expect_out "^✓ Closed $R1 — With reason: Done here$"
run bd create "Resolution alias" --silent
R2=$OUT
run bd close "$R2" --resolution "Fixed upstream"
expect_out "^✓ Closed $R2 — Resolution alias: Fixed upstream$"
run bd create "Message alias" --silent
R3=$OUT
run bd close "$R3" -m "Via -m"
expect_out ': Via -m$'
run bd create "Done alias" --silent
R4=$OUT
run bd done "$R4" -r "via done"
expect_ok
expect_out ': via done$'

# several ids, one reason each
run bd create "Pair a" --silent
PA=$OUT
run bd create "Pair b" --silent
PB=$OUT
run bd close "$PA" "$PB" -r first -r second
expect_ok
expect_out "^✓ Closed $PA — Pair a: first$"
expect_out "^✓ Closed $PB — Pair b: second$"

# no id: the last touched issue
run bd create "Last touched" --silent
LT=$OUT
run bd close
expect_ok
expect_out "^✓ Closed $LT — Last touched: Closed$"

# unknown id: non-zero, "no issue found"
run bd close test-nope
expect_fail
expect_err 'no issue found'

# guards: open blockers, epics with open children; --force overrides
run bd create "Blocker" --silent
BLOCKER=$OUT
run bd create "Blocked" --deps "$BLOCKER" --silent
BLOCKED=$OUT
run bd close "$BLOCKED"
expect_rc 1
expect_err "cannot close $BLOCKED: blocked by open issues \[$BLOCKER\]"
run bd close "$BLOCKED" --force
expect_ok
run bd create "Epic" -t epic --silent
EPIC=$OUT
run bd create "Step" --parent "$EPIC" --silent
run bd close "$EPIC"
expect_rc 1
expect_err "cannot close $EPIC"
run bd close "$EPIC" -f
expect_ok

# JSON: a bare array with closed_at and close_reason
run bd create "Json close" --silent
JC=$OUT
run bd close "$JC" --reason "json reason" --json
expect_ok
expect_line 1 "["
expect_out '"status": "closed"'
expect_out '"close_reason": "json reason"'
expect_out '"closed_at": "'

# --suggest-next names what the close unblocked
run bd create "Gate" --silent
GATE=$OUT
run bd create "Waiting" --deps "$GATE" --silent
WAITING=$OUT
run bd close "$GATE" --suggest-next
expect_ok
expect_err "$WAITING"

# validation.on-close=error refuses a terse reason
run bd config set validation.on-close error
run bd create "Validated" --silent
V=$OUT
run bd close "$V" --reason "done"
expect_fail
expect_err 'terse'
run bd close "$V" --reason "Implemented the parser and added tests"
expect_ok
run bd config unset validation.on-close

# reopen
run bd reopen "$ID"
expect_ok
expect_line 1 "↻ Reopened $ID"
run bd show "$ID"
expect_out '^Status: open$'
expect_no_out '^Closed: '
run bd close "$ID"
run bd reopen "$ID" --reason "needs more"
expect_out "^↻ Reopened $ID: needs more$"
run bd reopen test-nope
expect_fail
expect_err 'no issue found'
