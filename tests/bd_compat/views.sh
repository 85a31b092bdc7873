# bd list, search, stats/status, count, children, stale.

run bd init --prefix test
run bd create "Open bug" -t bug -p 1 -a alice -l api --silent
BUG=$OUT
run bd create "Open task" -p 2 --silent
TASK=$OUT
run bd create "Done task" -p 3 --silent
DONE=$OUT
run bd close "$DONE"

run bd list
expect_ok
expect_out "$BUG"
expect_out "Open bug"
expect_out "$TASK"
expect_no_out "$DONE"
run bd ls --all
expect_out "$DONE"
run bd list --status closed
expect_out "$DONE"
expect_no_out "$BUG"
run bd list -t bug
expect_out "$BUG"
expect_no_out "$TASK"
run bd list --assignee alice
expect_out "$BUG"
expect_no_out "$TASK"
run bd list -l api
expect_out "$BUG"
run bd list --priority-max 1
expect_out "$BUG"
expect_no_out "$TASK"
run bd list --title-contains "task"
expect_out "$TASK"
expect_no_out "$BUG"
run bd list -n 1
expect_same "$(printf '%s\n' "$OUT" | grep -c 'test-')" 1
run bd list --json
expect_line 1 "["
expect_out "\"id\": \"$BUG\""
run bd list --format json
expect_line 1 "["
run bd list --long
expect_out 'Labels: api'

# search
run bd search "bug"
expect_ok
expect_out "$BUG"
expect_no_out "$TASK"
run bd search "${TASK#test-}"
expect_out "$TASK"
run bd search nothing-matches-this
expect_ok
expect_out 'No issues found'
run bd search
expect_fail
expect_err 'search query is required'

# stats and its alias status
run bd stats
expect_ok
expect_out '^  Total Issues: +3$'
expect_out '^  Open: +2$'
expect_out '^  In Progress: +0$'
expect_out '^  Closed: +1$'
expect_out '^  Blocked: +0$'
expect_out '^  Deferred: +0$'
expect_out '^  Ready: +2$'
run bd status
expect_ok
expect_out 'Total Issues'
run bd stats --json
expect_line 1 "{"
expect_out '"total_issues": 3'
expect_out '"ready_issues": 2'
expect_out '"schema_version": 1'

# count
run bd count
expect_ok
expect_same "$OUT" "3"
run bd count --status open
expect_same "$OUT" "2"
run bd count --json
expect_out '"count": 3'
run bd count --by-status
expect_out 'closed: 1'
expect_out 'open: 2'

# children
run bd create "Epic" -t epic --silent
E=$OUT
run bd create "Kid one" --parent "$E" --silent
run bd create "Kid two" --parent "$E" --silent
run bd children "$E"
expect_ok
expect_out "$E\.1"
expect_out "$E\.2"
run bd children "$E" --json
expect_line 1 "["
run bd list --parent "$E"
expect_out "$E\.1"
expect_no_out "$BUG"

# stale: nothing is old yet
run bd stale
expect_ok
expect_out 'No stale issues'
run bd stale --days 0
expect_out "$BUG"

# epic status: progress of each open epic
run bd epic status
expect_ok
expect_out "^○ $E — Epic$"
expect_out 'Progress: 0/2 children closed'
run bd close "$E.1" "$E.2"
run bd epic status --eligible-only
expect_out "^✓ $E — Epic$"
expect_out 'eligible for closure'
