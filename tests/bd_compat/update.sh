# bd update: the success line, unknown ids, last-touched, claims, fields, errors.

run bd init --prefix test
run bd create "Target" --silent
ID=$OUT
run bd create "Other" --silent
OTHER=$OUT

run bd update "$ID" --status in_progress
expect_ok
expect_line 1 "✓ Updated issue: $ID — Target"
expect_err_empty
run bd show "$ID"
expect_out '^Status: in_progress$'

# unknown id: message on stderr, exit 1 (nothing was updated)
run bd update test-nope --status open
expect_rc 1
expect_err 'no issue found matching "test-nope"'

# no fields: a note, nothing changes
run bd update "$ID"
expect_ok
expect_out '^No updates specified$'

# no id: the last touched issue (here OTHER, touched by show)
run bd show "$OTHER"
run bd update --priority 0
expect_ok
expect_out "^✓ Updated issue: $OTHER — Other$"
run bd show "$OTHER"
expect_out '^Priority: P0$'
expect_same "$(cat .beads/last-touched)" "$OTHER"

# fields
run bd update "$ID" --title "Renamed" -p P3 -t chore -a bob -d "New text" --notes "n1" \
    --design "d" --acceptance "a" --external-ref ext-1 -e 15
expect_ok
run bd show "$ID"
expect_out "^$ID: Renamed$"
expect_out '^Priority: P3$'
expect_out '^Type: chore$'
expect_out '^Assignee: bob$'
expect_out '^Estimate: 15 min$'
run bd update "$ID" --append-notes "n2"
run bd show "$ID" --json
expect_out '"notes": "n1\\nn2"'

# labels: add, remove, replace
run bd update "$ID" --add-label one --add-label two
run bd show "$ID"
expect_out '^Labels: one, two$'
run bd update "$ID" --remove-label one
run bd show "$ID"
expect_out '^Labels: two$'
run bd update "$ID" --set-labels x,y
run bd show "$ID"
expect_out '^Labels: x, y$'

# reparent, and remove the parent
run bd create "Parent" -t epic --silent
PARENT=$OUT
run bd update "$OTHER" --parent "$PARENT"
expect_ok
run bd children "$PARENT"
expect_out "$OTHER"
run bd update "$OTHER" --parent ""
run bd children "$PARENT"
expect_no_out "$OTHER"

# metadata
run bd update "$ID" --metadata '{"team":"core"}'
expect_ok
run bd update "$ID" --set-metadata sprint=4
run bd show "$ID" --json
expect_out '"team": "core"'
expect_out '"sprint": 4'

# claim: in_progress and assigned to the actor; someone else cannot take it
run bd create "Claimable" --silent
CLAIM=$OUT
run env BD_ACTOR=agent-a bd update "$CLAIM" --claim
expect_ok
expect_out "^✓ Updated issue: $CLAIM — Claimable$"
run bd show "$CLAIM"
expect_out '^Status: in_progress$'
expect_out '^Assignee: agent-a$'
run env BD_ACTOR=agent-a bd update "$CLAIM" --claim
expect_ok
run env BD_ACTOR=agent-b bd update "$CLAIM" --claim
expect_rc 1
expect_err "claiming $CLAIM: issue already claimed by agent-a"
# unclaim the way fleet's supervisor releases work
run bd update "$CLAIM" --status open --assignee ""
expect_ok
run bd show "$CLAIM" --json
expect_out '"status": "open"'
expect_no_out '"assignee"'

# update --status closed closes it
run bd update "$CLAIM" --status closed
run bd show "$CLAIM"
expect_out '^Status: closed$'

# JSON: a bare array, no schema_version
run bd update "$ID" --priority 1 --json
expect_ok
expect_line 1 "["
expect_no_out '"schema_version"'
expect_out '"priority": 1'

# errors
run bd update "$ID" --priority 9
expect_fail
expect_err 'invalid priority'
run bd update "$ID" --status nonsense
expect_fail
expect_err 'invalid status'
run bd update "$ID" --estimate -5
expect_fail
expect_err 'estimate must be a non-negative'
run bd update "$ID" --due whenever
expect_fail
expect_err 'invalid --due format'

# no id and nothing touched yet
cd "$SCRATCH" && mkdir fresh && cd fresh
run bd init --prefix fresh --quiet
run bd update --priority 1
expect_rc 1
expect_err '^Error: no issue ID provided and no last touched issue$'

# --description=- (and the other stdin forms) reads stdin instead of storing "-"
run bd create "Piped into" --silent
ID=$OUT
run_in 'Piped `text` with "quotes"' bd update "$ID" --description=-
expect_ok
run bd show "$ID" --json
expect_out '"description": "Piped `text` with \\"quotes\\""'
run_in "Body via file flag" bd update "$ID" --body-file -
run bd show "$ID" --json
expect_out '"description": "Body via file flag"'
run_in "Design via stdin" bd update "$ID" --design-file -
run bd show "$ID" --json
expect_out '"design": "Design via stdin"'
expect_out '"description": "Body via file flag"'
run_in "via stdin flag" bd update "$ID" --stdin
run bd show "$ID" --json
expect_out '"description": "via stdin flag"'
