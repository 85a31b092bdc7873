# bd init: the workspace files, the legacy .gitignore, prefixes, discovery.

run bd init --prefix test
expect_ok
expect_line 1 "✓ bd initialized successfully!"
expect_out 'initialized successfully'
expect_file .beads/beads.db
expect_file .beads/metadata.json
expect_file .beads/.gitignore
for line in '^\*\.db$' '^\*\.db-journal$' '^\*\.db-wal$' '^\*\.db-shm$' '^daemon\.log$' \
    '^daemon\.pid$' '^bd\.sock$' '^!\*\.jsonl$' '^!metadata\.json$' '^!config\.json$'; do
    expect_file_line .beads/.gitignore "$line"
done
expect_file_line .beads/metadata.json '"database": "beads.db"'
# init creates no JSONL and no export state
expect_no_file .beads/issues.jsonl
expect_no_file .beads/export-state.json

# a second init refuses
run bd init --prefix test
expect_fail
expect_err 'already'

# the store works and ids carry the prefix
run bd create "Init check"
expect_ok
expect_out '^✓ Created issue: test-[a-z0-9]+ — Init check$'

# the default prefix comes from the directory name
mkdir -p "$SCRATCH/My_Proj" && cd "$SCRATCH/My_Proj"
run bd init
expect_ok
expect_out 'Issue prefix: my-proj'
run bd create "Named by directory" --silent
expect_ok
expect_out '^my-proj-[a-z0-9]+$'

# --quiet prints nothing
mkdir -p "$SCRATCH/quiet" && cd "$SCRATCH/quiet"
run bd init --prefix qq --quiet
expect_ok
expect_out_empty
expect_file .beads/beads.db

# discovery walks up from a subdirectory to the nearest .beads
mkdir -p "$SCRATCH/My_Proj/src/deep" && cd "$SCRATCH/My_Proj/src/deep"
run bd list
expect_ok
expect_out 'Named by directory'

# BEADS_DIR wins over the directory walk
cd "$SCRATCH/My_Proj"
run env BEADS_DIR="$SCRATCH/quiet/.beads" bd create "Through BEADS_DIR" --silent
expect_ok
expect_out '^qq-[a-z0-9]+$'

# --db names the workspace (the directory or its beads.db)
run bd --db "$SCRATCH/quiet/.beads/beads.db" list
expect_ok
expect_out 'Through BEADS_DIR'
run bd list --db "$SCRATCH/quiet/.beads"
expect_ok
expect_out 'Through BEADS_DIR'

# init at BEADS_DIR
run env BEADS_DIR="$SCRATCH/elsewhere/.beads" bd init --prefix else
expect_ok
expect_file "$SCRATCH/elsewhere/.beads/beads.db"

# no workspace anywhere: a clear error, exit 1
mkdir -p "$SCRATCH/empty" && cd "$SCRATCH/empty"
run bd list
expect_rc 1
expect_err '^Error: no beads database found'

# a beads checkout (git era): .beads/issues.jsonl and no fleet store. The hint leads to this
# project's store, and `bd init` takes the file's prefix and names (or runs) the import.
mkdir -p "$SCRATCH/gitera/.beads" && cd "$SCRATCH/gitera"
printf '%s\n' \
    '{"id":"ge-a1","title":"First of the team","status":"open","priority":1,"issue_type":"task","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}' \
    '{"id":"ge-b2","title":"Second of the team","status":"open","priority":2,"issue_type":"task","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}' \
    >.beads/issues.jsonl
run bd list
expect_rc 1
expect_err "bd init --from-jsonl.*this project's database from $SCRATCH/gitera/.beads/issues.jsonl"
run bd init
expect_ok
expect_out 'Issue prefix: ge$'
expect_err 'issues.jsonl holds this project.s issues.*`bd import`'
run bd import
expect_ok
run bd show ge-a1
expect_out '^ge-a1: First of the team$'
run fleet list --json
expect_no_out 'First of the team'
mkdir -p "$SCRATCH/gitera2/.beads" && cd "$SCRATCH/gitera2"
cp "$SCRATCH/gitera/.beads/issues.jsonl" .beads/
run bd init --from-jsonl
expect_ok
run bd count
expect_out '^2$'

# a Dolt-era checkout: the hint imports into this project's store, not fleet's central queue
mkdir -p "$SCRATCH/doltera/.beads/dolt" && cd "$SCRATCH/doltera"
echo '{"backend":"dolt"}' >.beads/metadata.json
run bd list
expect_rc 1
expect_err "bd import $SCRATCH/doltera/.beads --via-bd"
expect_no_err 'fleet import'
run fleet import .beads
expect_fail
expect_err 'to give the project its own store, run `fleet import .beads --via-bd --db .beads`'
run bd import .beads --via-bd
expect_fail
expect_err "beads' own bd"

# types.custom / status.custom of .beads/config.yaml are honoured, as beads falls back to them
mkdir -p "$SCRATCH/gastown/.beads" && cd "$SCRATCH/gastown"
printf 'issue-prefix: gt\ntypes.custom: convoy,agent\nstatus:\n  custom: [resolved]\n' \
    >.beads/config.yaml
run bd init -q
expect_ok
run bd create "A convoy" -t convoy --silent
expect_ok
CONVOY=$OUT
run bd update "$CONVOY" --status resolved
expect_ok
run bd show "$CONVOY" --json
expect_out '"issue_type": "convoy"'
expect_out '"status": "resolved"'
run bd create "Resolved at birth" -t agent --silent
expect_ok
run bd create "Unknown" -t nosuchtype
expect_fail
expect_err 'nosuchtype'
