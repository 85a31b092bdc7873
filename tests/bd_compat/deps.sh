# bd dep add/remove/list/tree/cycles and `bd dep <blocker> --blocks <blocked>`.

run bd init --prefix test
run bd create "Alpha" --silent
A=$OUT
run bd create "Beta" --silent
B=$OUT
run bd create "Gamma" --silent
C=$OUT

run bd dep add "$A" "$B"
expect_ok
expect_line 1 "✓ Added dependency: $A (Alpha) depends on $B (Beta) (blocks)"
run bd show "$A"
expect_out '^Dependencies \(1\):$'
expect_out "$B"

# self and cycles are refused
run bd dep add "$A" "$A"
expect_fail
expect_err 'cannot depend on itself'
run bd dep add "$B" "$A"
expect_fail
expect_err 'would create a cycle'

# the shorthand: C blocks B
run bd dep "$C" --blocks "$B"
expect_ok
expect_out "^✓ Added dependency: $B \(Beta\) depends on $C \(Gamma\) \(blocks\)$"

# types
run bd create "Note" --silent
N=$OUT
run bd dep add "$N" "$A" --type related
expect_ok
expect_out '\(related\)$'

# list and tree
run bd dep list "$A"
expect_ok
expect_out "$B"
run bd dep list "$B" --direction up
expect_out "$A"
run bd dep tree "$A"
expect_ok
expect_out "$A: Alpha"
expect_out "$C: Gamma"
run bd dep tree "$A" --format mermaid
expect_out '^graph TD$'

run bd dep cycles
expect_ok
expect_out '^✓ No dependency cycles detected$'

# JSON of dep add: an object with schema_version
run bd dep add "$N" "$C" --json
expect_ok
expect_line 1 "{"
expect_out '"status": "added"'
expect_out "\"depends_on_id\": \"$C\""
expect_out '"schema_version": 1'

# remove
run bd dep remove "$A" "$B"
expect_ok
expect_line 1 "✓ Removed dependency: $A no longer depends on $B"
run bd show "$A"
expect_out '^Dependencies \(0\):$'
run bd dep remove "$A" "$B"
expect_fail

# epics block only epics
run bd create "Epic" -t epic --silent
E=$OUT
run bd dep add "$E" "$A"
expect_fail
expect_err 'epics can only block other epics'
run bd dep add "$A" "$E"
expect_fail
expect_err 'tasks can only block other tasks'

# unknown ids
run bd dep add test-nope "$A"
expect_fail
expect_err 'no issue found matching "test-nope"'
