# `fleet bd …` runs the bd personality on fleet's central queue; `fleet link-bd` makes the link.

run fleet bd init --prefix fq
expect_ok
expect_out 'initialized successfully'
expect_file "$FLEET_HOME/.beads/beads.db"

run fleet bd create "Central task" --silent
expect_ok
ID=$OUT
expect_out '^fq-[a-z0-9]+$'

# plain `bd` reaches the same queue through BEADS_DIR
run env BEADS_DIR="$FLEET_HOME/.beads" bd show "$ID"
expect_out "^$ID: Central task$"

# fleet's own view of it
run fleet show "$ID"
expect_ok
expect_out "Central task"

# fleet's global flags carry over
run fleet --json bd show "$ID"
expect_line 1 "["

# fleet bd --help is bd's help
run fleet bd --help
expect_ok
expect_out '^Available Commands:$'

# link-bd: a bd link in the given directory that runs the bd personality
mkdir -p "$SCRATCH/links"
run fleet link-bd "$SCRATCH/links"
expect_ok
expect_out '^✓ Linked '
expect_file "$SCRATCH/links/bd"
run env BEADS_DIR="$FLEET_HOME/.beads" "$SCRATCH/links/bd" ready
expect_ok
expect_out "$ID"
run fleet link-bd "$SCRATCH/links"
expect_ok
expect_out 'already links'
printf '#!/bin/sh\n' >"$SCRATCH/links2-bd" && mkdir -p "$SCRATCH/links2" && mv "$SCRATCH/links2-bd" "$SCRATCH/links2/bd"
run fleet link-bd "$SCRATCH/links2"
expect_fail
expect_err 'already exists'
run fleet link-bd "$SCRATCH/links2" --force
expect_ok

# link-bd with fleet reached through a symbolic link on PATH: the bd link goes into that PATH
# directory (not beside the real binary, which is not on PATH), with no PATH warning
mkdir -p "$SCRATCH/pathbin"
ln -s "$(readlink -f "$BIN/fleet")" "$SCRATCH/pathbin/fleet"
run env PATH="$SCRATCH/pathbin:/usr/bin:/bin" fleet link-bd
expect_ok
expect_out "^✓ Linked $SCRATCH/pathbin/bd -> "
expect_no_out 'not on PATH'
expect_file "$SCRATCH/pathbin/bd"
expect_no_file "$(dirname "$(readlink -f "$BIN/fleet")")/bd"
run "$SCRATCH/pathbin/fleet" link-bd
expect_ok
expect_out "already links"
# a directory off PATH gets the note
mkdir -p "$SCRATCH/offpath"
run env PATH="$SCRATCH/pathbin:/usr/bin:/bin" fleet link-bd "$SCRATCH/offpath"
expect_out 'is not on PATH'
