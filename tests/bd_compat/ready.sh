# bd ready, ready --claim, blocked, defer/undefer.

run bd init --prefix test
run bd ready
expect_ok
expect_out 'No open issues'

run bd create "Low" -p 3 --silent
LOW=$OUT
run bd create "High" -p 1 --silent
HIGH=$OUT
run bd create "Waits" -p 0 --deps "$HIGH" --silent
WAITS=$OUT

run bd ready
expect_ok
expect_out '^📋 Ready work \(2 issues with no active blockers\):$'
expect_out "^1\. \[● P1\] \[task\] $HIGH: High$"
expect_out "^2\. \[● P3\] \[task\] $LOW: Low$"
expect_no_out "$WAITS"

run bd blocked
expect_ok
expect_out '^🚫 Blocked issues \(1\):$'
expect_out "$WAITS: Waits"
expect_out "Blocked by 1 open dependencies: \[$HIGH\]"
run bd blocked --json
expect_out '"blocked_by_count": 1'

# closing the blocker makes the dependent ready
run bd close "$HIGH"
run bd ready
expect_out "$WAITS: Waits"
run bd blocked
expect_out 'No blocked issues'

# filters and limits
run bd create "Labelled" -l urgent --silent
LAB=$OUT
run bd ready --label urgent
expect_out "$LAB"
expect_no_out "$LOW"
run bd ready -n 1
expect_out '^📋 Ready work \(1 issues'
run bd ready --json
expect_line 1 "["
expect_out "\"id\": \"$WAITS\""
expect_out '"dependency_count": 1'

# defer hides, undefer brings back
run bd defer "$LOW"
expect_ok
expect_out "$LOW"
run bd ready
expect_no_out "$LOW"
run bd show "$LOW"
expect_out '^Status: deferred$'
run bd undefer "$LOW"
expect_ok
run bd ready
expect_out "$LOW"
run bd defer "$LOW" --until +2d
run bd ready
expect_no_out "$LOW"
run bd undefer "$LOW"

# ready --claim: the first ready issue in ready order becomes ours
run env BD_ACTOR=agent-1 bd ready --claim
expect_ok
expect_out "^✓ Claimed issue: $WAITS — Waits$"
run bd show "$WAITS"
expect_out '^Status: in_progress$'
expect_out '^Assignee: agent-1$'
run env BD_ACTOR=agent-2 bd ready --claim --json
expect_ok
expect_line 1 "["
expect_out '"assignee": "agent-2"'
run env BD_ACTOR=agent-3 bd ready --claim
run env BD_ACTOR=agent-4 bd ready --claim
expect_ok
expect_out '^○ No ready work to claim$'
run env BD_ACTOR=agent-4 bd ready --claim --json
expect_ok
expect_out '^\[\]$'
run bd ready --claim --assignee x
expect_fail
