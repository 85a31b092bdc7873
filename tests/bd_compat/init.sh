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
