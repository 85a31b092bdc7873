# bd lint: required sections per type; non-zero naming each issue that lacks them.

run bd init --prefix test
run bd lint
expect_ok
expect_out 'No template warnings'

run bd create "Bare task" -d "Just words" --silent
TASK=$OUT
run bd create "Good bug" -t bug -d "## Steps to Reproduce
1. run it
## Acceptance Criteria
- no crash" --silent
GOOD=$OUT
run bd create "Bad bug" -t bug -d "## Steps to Reproduce
1. run it" --silent
BAD=$OUT
run bd create "Chore" -t chore --silent

run bd lint
expect_fail
expect_out "$TASK"
expect_out "$BAD"
expect_no_out "$GOOD"
expect_out 'Missing: ## Acceptance Criteria'
expect_no_out 'Chore'

run bd lint "$GOOD"
expect_ok
run bd lint "$BAD"
expect_fail
expect_out "^$BAD \[bug\]: Bad bug$"

run bd lint --json
expect_fail
expect_out '"issues": 2'
expect_out "\"id\": \"$TASK\""

# fixing them makes lint pass
run bd update "$TASK" --acceptance "It works"
run bd update "$BAD" -d "## Steps to Reproduce
1. run it
## Acceptance Criteria
- fixed"
run bd lint
expect_ok
expect_out 'No template warnings'

# other types
run bd create "Decide" -t decision -d "## Decision
x
## Rationale
y" --silent
run bd lint "$OUT"
expect_fail
expect_out 'Alternatives Considered'
run bd create "Epic" -t epic -d "## Success Criteria
done" --silent
run bd lint "$OUT"
expect_ok
