# bd comments / comment and bd label.

run bd init --prefix test
run bd create "Talked about" --silent
ID=$OUT

run bd comments add "$ID" "First note"
expect_ok
expect_line 1 "✓ Comment added to $ID — Talked about"
run bd comment "$ID" "Second note" --author reviewer
expect_ok
expect_out "^✓ Comment added to $ID — Talked about$"
printf 'From a file\n' >"$SCRATCH/c.txt"
run bd comments add "$ID" -f "$SCRATCH/c.txt"
expect_ok

run bd comments "$ID"
expect_ok
expect_out 'First note'
expect_out 'Second note'
expect_out '\[reviewer\]'
expect_out 'From a file'
run bd comments "$ID" --json
expect_line 1 "["
expect_out '"author": "reviewer"'
expect_out '"text": "First note"'
run bd comments test-nope
expect_fail
expect_err 'no issue found'

# labels
run bd create "Second" --silent
ID2=$OUT
run bd label add "$ID" "$ID2" frontend
expect_ok
expect_out "^✓ Added label 'frontend' to $ID$"
expect_out "^✓ Added label 'frontend' to $ID2$"
run bd label add "$ID" backend
run bd label list "$ID"
expect_ok
expect_out "^🏷 Labels for $ID:$"
expect_out '^  - backend$'
expect_out '^  - frontend$'
run bd label list-all
expect_ok
expect_out '^🏷 All labels \(2 unique\):$'
expect_out 'frontend +\(2 issues\)'
run bd label remove "$ID" frontend
expect_ok
expect_out "^✓ Removed label 'frontend' from $ID$"
run bd label list "$ID2" --json
expect_out '"frontend"'
run bd create "Bare" --silent
run bd label list "$OUT"
expect_out 'has no labels'

# propagate a parent's label to its children
run bd create "Parent" -t epic --silent
P=$OUT
run bd create "Kid" --parent "$P" --no-inherit-labels --silent
KID=$OUT
run bd label propagate "$P" team-x
expect_ok
run bd label list "$KID"
expect_out 'team-x'
