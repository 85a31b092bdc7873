# bd show: the legacy block, unknown ids (exit 1 when none is found), JSON, partial ids.

run bd init --prefix test
run bd create "Blocker" --silent
BLOCKER=$OUT
run bd create "Main task" -d "Details here" --deps "$BLOCKER" --silent
MAIN=$OUT

run bd show "$MAIN"
expect_ok
expect_line 1 "$MAIN: Main task"
expect_out '^Status: open$'
expect_out '^Priority: P2$'
expect_out '^Type: task$'
expect_out '^Dependencies \(1\):$'
expect_out "$BLOCKER"
expect_out 'Details here'
expect_same "$(cat .beads/last-touched)" "$MAIN"

# statuses are lowercase
run bd update "$MAIN" --status in_progress
run bd show "$MAIN"
expect_out '^Status: in_progress$'

# the blocker lists its dependent
run bd show "$BLOCKER"
expect_out '^Dependencies \(0\):$'
expect_out '^Dependents \(1\):$'

# unknown id: message on stderr, exit 1 (beads 1.0.5)
run bd show test-nope
expect_rc 1
expect_err '^Error fetching test-nope: no issue found matching "test-nope"$'
expect_out_empty

# one unknown among known ones: the known one is shown
run bd show test-nope "$MAIN"
expect_rc 0
expect_err 'no issue found matching "test-nope"'
expect_out "^$MAIN: Main task$"

# no id: an error, non-zero
run bd show
expect_fail
expect_err 'issue ID is required'

# --current shows the last touched issue
run bd show --current
expect_ok
expect_out "^$MAIN: Main task$"

# partial ids: the hash alone, or without the prefix
HASH=${MAIN#test-}
run bd show "$HASH"
expect_ok
expect_out "^$MAIN: Main task$"

# several ids, --short, the view alias
run bd show "$MAIN" "$BLOCKER" --short
expect_ok
expect_out "^$MAIN "
expect_out "^$BLOCKER "
run bd view "$BLOCKER"
expect_ok
expect_out "^$BLOCKER: Blocker$"

# JSON: an array of details with dependencies and counts; dependents only when asked
run bd show "$MAIN" --json
expect_ok
expect_line 1 "["
expect_out '"dependencies": \['
expect_no_out '"dependents"'
expect_out '"dependency_count": 1'
expect_out "\"id\": \"$BLOCKER\""
expect_no_out '"schema_version"'

# comments show in the block
run bd comments add "$MAIN" "A remark"
run bd show "$MAIN"
expect_out '^Comments \(1\):$'
expect_out 'A remark'
