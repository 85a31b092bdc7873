# Auto-export (export.auto) and bd export / bd import.

run bd init --prefix test
run bd create "Before auto" --silent
FIRST=$OUT
expect_no_file .beads/issues.jsonl
expect_no_file .beads/export-state.json

run bd config set export.auto true
expect_ok
expect_out '^Set export.auto = true$'

# the next write command writes both files
run bd create "After auto" --silent
SECOND=$OUT
expect_file .beads/issues.jsonl
expect_file .beads/export-state.json
expect_file_line .beads/issues.jsonl "\"id\":\"$FIRST\""
expect_file_line .beads/issues.jsonl "\"id\":\"$SECOND\""

# and keeps them current
run bd close "$FIRST" --reason "shipped"
expect_file_line .beads/issues.jsonl '"close_reason":"shipped"'

# bd export to stdout and to a file
run bd export
expect_ok
expect_out "\"id\":\"$FIRST\""
run bd export -o "$SCRATCH/out.jsonl"
expect_ok
expect_err 'Exported 2 issues to'
expect_file "$SCRATCH/out.jsonl"

# bd import into a fresh workspace
mkdir -p "$SCRATCH/other" && cd "$SCRATCH/other"
run bd init --prefix test --quiet
run bd import "$SCRATCH/out.jsonl"
expect_ok
expect_err 'Imported 2 issues'
run bd show "$SECOND"
expect_out "^$SECOND: After auto$"
run bd show "$FIRST"
expect_out '^Status: closed$'

# a checkout that has only .beads/issues.jsonl (the git-tracked file of legacy beads)
mkdir -p "$SCRATCH/clone/.beads" && cd "$SCRATCH/clone"
cp "$SCRATCH/out.jsonl" .beads/issues.jsonl
printf '{"database": "beads.db"}\n' >.beads/metadata.json
run bd list
expect_rc 1
expect_err 'no beads database found'
expect_err "bd init --from-jsonl"
run bd init --from-jsonl
expect_ok
expect_out 'initialized successfully'
expect_out 'Issue prefix: test'
run bd show "$SECOND"
expect_out "^$SECOND: After auto$"
