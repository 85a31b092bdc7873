# MIGRATING.md section 5, followed literally: a git-era and a Dolt-era beads checkout become
# fleet projects, and the committed JSONL keeps every record beads wrote.

export GIT_AUTHOR_NAME=tester GIT_AUTHOR_EMAIL=t@example.com
export GIT_COMMITTER_NAME=tester GIT_COMMITTER_EMAIL=t@example.com

# --- git era: .beads/issues.jsonl committed (30 issues, 2 of them messages, 10 tombstones)
mkdir -p "$SCRATCH/gitera/.beads" && cd "$SCRATCH/gitera"
git init -q . && cp "$FIXTURES/beads-git-era-sample.jsonl" .beads/issues.jsonl
git add .beads && git commit -q -m "beads era"
run bd list
expect_rc 1
expect_err 'bd init --from-jsonl'
run fleet link-bd
expect_ok
run bd init --from-jsonl
expect_ok
expect_out 'Issue prefix: bd$'
run bd hooks install --chain
expect_ok
run bd config set export.auto true
expect_ok
run bd count
expect_out '^30$'
run bd create "First issue on fleet" --silent
expect_ok
NEW=$OUT
expect_same "$(grep -c '"status":"tombstone"' .beads/issues.jsonl)" 10
expect_same "$(grep -c '"issue_type":"message"' .beads/issues.jsonl)" 2
expect_file_line .beads/issues.jsonl "\"id\":\"$NEW\""
git add .beads/issues.jsonl
run git commit -q -m "first fleet issue"
expect_ok
expect_same "$(git show HEAD:.beads/issues.jsonl | grep -c .)" 41

# --- Dolt era: beads' own bd exports the Dolt database once, before fleet is linked
mkdir -p "$SCRATCH/beadsbin" "$SCRATCH/doltera/.beads/dolt" && cd "$SCRATCH/doltera"
cat >"$SCRATCH/beadsbin/bd" <<SH
#!/bin/sh
[ -d .beads/dolt ] || exit 3
while [ \$# -gt 0 ]; do [ "\$1" = -o ] && out=\$2; shift; done
cp "$FIXTURES/beads-dolt-era-sample.jsonl" "\$out"
SH
chmod +x "$SCRATCH/beadsbin/bd"
echo '{"backend":"dolt","database":"dolt"}' >.beads/metadata.json
git init -q .
run env PATH="$SCRATCH/beadsbin:$PATH" fleet import .beads --via-bd --db .beads
expect_ok
expect_err 'Imported 25 issues'
run fleet link-bd
expect_ok
run bd hooks install --chain
expect_ok
run bd count
expect_out '^25$'
run fleet list --json
expect_no_out '"id": "bd-dgp"'
expect_same "$(cat .beads/metadata.json)" '{"backend":"dolt","database":"dolt"}'
# after linking, bd import --via-bd finds beads' bd behind fleet's on PATH
run env PATH="$PATH:$SCRATCH/beadsbin" bd import .beads --via-bd
expect_ok
expect_err 'unchanged: 25'
