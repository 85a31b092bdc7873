# bd delete: the preview without --force, errors, hard delete, cascade.

run bd init --prefix test
run bd create "Doomed" --silent
D=$OUT
run bd create "Depends on doomed" --deps "$D" --silent
DEP=$OUT

run bd delete "$D"
expect_rc 0
expect_out 'DELETE PREVIEW'
expect_line 1 "⚠️  DELETE PREVIEW"
expect_out "$D"
run bd show "$D"
expect_out "^$D: Doomed$"

run bd delete
expect_fail
expect_err 'no issue IDs provided'
run bd delete test-nope --force
expect_fail
expect_err 'not found'

run bd delete "$D" --force
expect_ok
expect_out "^✓ Deleted $D — Doomed$"
run bd show "$D"
expect_err 'no issue found'
run bd show "$DEP"
expect_out '^Dependencies \(0\):$'

# --dry-run previews even with --force; --cascade takes dependents along
run bd create "Root" --silent
ROOT=$OUT
run bd create "Leaf" --deps "$ROOT" --silent
LEAF=$OUT
run bd delete "$ROOT" --cascade --force --dry-run
expect_out 'DELETE PREVIEW'
expect_out "$LEAF"
run bd delete "$ROOT" --cascade --force
expect_ok
run bd count
expect_same "$OUT" "1"

# ids from a file
run bd create "Listed" --silent
printf '%s\n' "$OUT" >"$SCRATCH/ids.txt"
run bd delete --from-file "$SCRATCH/ids.txt" --force
expect_ok
expect_out 'Deleted'
