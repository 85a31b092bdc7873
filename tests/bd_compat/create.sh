# bd create: the success lines, the id token, flags, errors.

run bd init --prefix test
expect_ok

run bd create "Fix the login bug"
expect_ok
expect_line 1 "✓ Created issue: $(first_id) — Fix the login bug"
expect_line 2 "  Priority: P2"
expect_line 3 "  Status: open"
expect_err_empty
ID=$(first_id)
expect_same "$(cat .beads/last-touched)" "$ID"

# the first prefix-[a-z0-9]+ token on stdout is the new id
run bd show "$ID"
expect_ok
expect_out "^$ID: Fix the login bug$"

# --silent prints only the id
run bd create "Quiet one" --silent
expect_ok
expect_out '^test-[a-z0-9]+$'
expect_same "$(printf '%s\n' "$OUT" | wc -l | tr -d ' ')" 1

# flags land in the issue
run bd create "Flagged" -p P1 -t bug -l ui,backend -a alice -d "Some text" --acceptance "Works" \
    --design "Plan" --notes "Note" --external-ref gh-9 -e 30
expect_ok
expect_out '^  Priority: P1$'
FLAGGED=$(first_id)
run bd show "$FLAGGED"
expect_out '^Priority: P1$'
expect_out '^Type: bug$'
expect_out '^Assignee: alice$'
expect_out '^Labels: backend, ui$'
expect_out '^External ref: gh-9$'
expect_out '^Estimate: 30 min$'
expect_out 'Some text'

# --title, the `new` alias, type aliases
run bd new --title "Via flag" -t feat --silent
expect_ok
run bd show "$OUT"
expect_out '^Type: feature$'

# --parent gives a dotted child id and a parent-child edge
run bd create "Epic" -t epic --silent
EPIC=$OUT
run bd create "Child one" --parent "$EPIC"
expect_ok
expect_out "^✓ Created issue: $EPIC\.1 — Child one$"
run bd create "Child two" --parent "$EPIC" --silent
expect_same "$OUT" "$EPIC.2"

# --deps: a plain id, blocked-by: and depends-on: make the new issue wait for the target
run bd create "Blocked one" --deps "$ID" --silent
BLOCKED=$OUT
run bd show "$BLOCKED"
expect_out '^Dependencies \(1\):'
expect_out "$ID"
run bd create "Also blocked" --deps "blocked-by:$ID,discovered-from:$FLAGGED" --silent
run bd show "$OUT"
expect_out '^Dependencies \(2\):'
run bd create "Waits too" --deps "depends-on:$ID" --silent
WAITS=$OUT
run bd blocked --json
expect_out "\"id\": \"$WAITS\""

# --deps blocks:X (beads 1.0): the NEW issue blocks X, so X waits and the new one is ready
run bd create "Goes first" --silent
FIRST=$OUT
run bd create "Blocker of first" --deps "blocks:$FIRST" --silent
expect_ok
BLOCKER=$OUT
run bd dep list "$FIRST" --json
expect_out "\"id\": \"$BLOCKER\""
run bd ready --json
expect_out "\"id\": \"$BLOCKER\""
expect_no_out "\"id\": \"$FIRST\""
run bd show "$BLOCKER"
expect_out '^Dependencies \(0\):'
run bd create "Blocks a stranger" --deps "blocks:other-zz9" --silent
expect_fail
expect_err 'blocks:other-zz9.*blocked-by:other-zz9'

# description from --body-file and --stdin
printf 'From a file\n' >"$SCRATCH/body.md"
run bd create "Body file" --body-file "$SCRATCH/body.md" --silent
run bd show "$OUT"
expect_out 'From a file'
run_in "From stdin" bd create "Body stdin" --stdin --silent
expect_ok
run bd show "$OUT"
expect_out 'From stdin'

# "-" reads stdin for --description/--body/-m and the file flags (beads' AGENTS.md habit)
QUOTED='Has `backticks`, "quotes" and $dollars'
for FLAG in --description=- "-d -" "--body -" "-m -" "--description-file -" "--body-file -"; do
    # shellcheck disable=SC2086
    run_in "$QUOTED" bd create "Piped $FLAG" $FLAG --json
    expect_ok
    expect_out '"description": "Has `backticks`, \\"quotes\\" and \$dollars"'
done
run_in "Plan from stdin" bd create "Design piped" --design-file - -d "inline" --json
expect_out '"design": "Plan from stdin"'
expect_out '"description": "inline"'
printf 'Plan from a file\n' >"$SCRATCH/design.md"
run bd create "Design file" --design-file "$SCRATCH/design.md" --json
expect_out '"design": "Plan from a file'
run_in "x" bd create "Both from stdin" --stdin --design=- --silent
expect_fail
expect_err 'either the description or the design'
run bd create "Two sources" --stdin -d "text"
expect_fail
run bd create "Missing file" --body-file "$SCRATCH/nope.md"
expect_fail
expect_err 'reading the description from .*nope.md'

# --dry-run writes nothing
run bd count
BEFORE=$OUT
run bd create "Not really" --dry-run
expect_ok
expect_out 'Not really'
run bd count
expect_same "$OUT" "$BEFORE"

# --file: one issue per ## heading
cat >"$SCRATCH/bulk.md" <<'MD'
## Bulk first
Intro text.
### Priority
1
### Labels
bulk
## Bulk second
### Type
bug
MD
run bd create --file "$SCRATCH/bulk.md"
expect_ok
expect_out '^✓ Created 2 issues'
run bd list --label bulk
expect_out 'Bulk first'
expect_no_out 'Bulk second'

# --validate refuses missing sections
run bd create "Missing criteria" -t task -d "No criteria here" --validate
expect_fail
expect_err 'Acceptance Criteria'
run bd create "Has criteria" -t task -d "Do it" --acceptance "It works" --validate
expect_ok
expect_out 'Created issue:'
run bd create "Bug without steps" -t bug -d "No sections" --validate --dry-run
expect_fail
expect_err 'Steps to Reproduce'

# errors, each non-zero
run bd create
expect_fail
expect_err 'title required'
run bd create ''
expect_fail
expect_err 'title is required'
run bd create "Bad type" --type invalid-type
expect_fail
expect_err 'invalid issue type'
run bd create "Bad priority" --priority 99
expect_fail
expect_err 'invalid priority'
run bd create "Bad estimate" -e -5
expect_fail
expect_err 'estimate must be a non-negative'
run bd create "Bad due" --due someday
expect_fail
expect_err 'invalid --due format'
run bd create "Bad defer" --defer nonsense
expect_fail
expect_err 'invalid --defer format'
run bd create "Bad parent" --parent test-nope
expect_fail
expect_err 'no issue found'

# --id outside the id grammar (ids name task directories): refused with the id named, exit 1,
# nothing created — also with --force (which only skips prefix checks) and --dry-run
run bd count
BEFORE=$OUT
for BAD in /abs/dir ../x a/b .. . -rf "a b" ""; do
    run bd create "Bad id" "--id=$BAD"
    expect_rc 1
    expect_out_empty
    printf '%s\n' "$ERR" | grep -Fq -- "Error: invalid issue id \"$BAD\": "
    _check "stderr naming the id \"$BAD\"" $?
done
run bd create "Bad id" --id "$(printf 'a\nb')"
expect_rc 1
expect_err '^Error: invalid issue id "a\\nb": .\\n. is not allowed'
run bd create "Bad id" --id ../x --force
expect_rc 1
expect_err "^Error: invalid issue id \"\\.\\./x\": '/' is not allowed; ids may contain only letters, digits"
run bd create "Bad id" --id ../x --dry-run
expect_rc 1
expect_out_empty
expect_err 'invalid issue id "\.\./x"'
run bd create "Bad id" --id ../x --json
expect_rc 1
expect_out_empty
expect_err '"error": "invalid issue id \\"\.\./x\\": '
expect_err '"schema_version": 1'
run bd count
expect_same "$OUT" "$BEFORE"
expect_no_file "$FLEET_HOME/tasks"
run bd create "Good id" --id test-mine.1 --silent
expect_ok
expect_same "$OUT" "test-mine.1"
