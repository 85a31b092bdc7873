# Actor resolution: --actor, BEADS_ACTOR, BD_ACTOR, git user.name, $USER.

run bd init --prefix test

run bd create "By user" --json
expect_out '"created_by": "tester"'

printf '[user]\n\tname = Git Person\n' >"$SCRATCH/gitconfig"
run env GIT_CONFIG_GLOBAL="$SCRATCH/gitconfig" bd create "By git" --json
expect_out '"created_by": "Git Person"'

run env GIT_CONFIG_GLOBAL="$SCRATCH/gitconfig" BD_ACTOR=bd-actor bd create "By BD_ACTOR" --json
expect_out '"created_by": "bd-actor"'

run env BD_ACTOR=bd-actor BEADS_ACTOR=beads-actor bd create "By BEADS_ACTOR" --json
expect_out '"created_by": "beads-actor"'

run env BEADS_ACTOR=beads-actor bd --actor flag-actor create "By flag" --json
expect_out '"created_by": "flag-actor"'

# the actor is who claims
run bd create "To claim" --silent
run env BEADS_ACTOR=claimer bd update "$OUT" --claim --json
expect_out '"assignee": "claimer"'

# comments are authored by the actor
run bd create "Discussed" --silent
C=$OUT
run bd --actor commenter comments add "$C" "hello"
run bd comments "$C" --json
expect_out '"author": "commenter"'
