# bd help, version, quickstart, prime (--full, --mcp), human. None needs a workspace.

run bd help
expect_ok
expect_out '^Usage:$'
expect_out '^Available Commands:$'
for command in create list show update close reopen ready dep comments label blocked stats \
    search delete count children defer undefer prime quickstart lint config export import init \
    version; do
    expect_out "^  $command "
done
expect_out '^Flags:$'
run bd --help
expect_ok
expect_out '^Available Commands:$'
run bd
expect_ok
expect_out '^Usage:$'
run bd help create
expect_ok
expect_out '^Usage:$'
expect_out '--priority'
run bd create --help
expect_ok
expect_out '--silent'
# A subcommand's help has bd's layout: its flags under Flags:, help among them, and the
# global flags below.
expect_out '^Flags:$'
expect_out '^  -h, --help +help for create$'
expect_out '^Global Flags:$'
run bd ready -h
expect_ok
expect_out '^  -h, --help +help for ready$'

run bd version
expect_ok
expect_out '^bd version [0-9]+\.[0-9]+\.[0-9]+ \(fleet [0-9.]+\)$'
run bd --version
expect_ok
expect_out '^bd version [0-9]+\.[0-9]+\.[0-9]+ '
run bd version --json
expect_out '"version": "'

run bd quickstart
expect_ok
expect_out 'Dependency-Aware'
expect_out 'bd init'
expect_out 'bd create'

# Outside any beads project, prime says nothing and succeeds (global session hooks must not
# leak into unrelated projects); inside one it prints the primer.
run bd prime
expect_ok
expect_out_empty
expect_err_empty
run bd init -q --prefix gd
run bd prime
expect_ok
expect_out 'bd ready'
expect_out 'bd close'
# What an agent must not lose when the primer is cut for tokens (issue 33).
for needle in 'bd update <id> --claim' 'bd show <id>' '--reason' '--status blocked' 'QUESTION:' \
    'discovered-from:<id>' '--terse' '--json' 'bd prime --full' 'Session close' 'git status'; do
    expect_out "$needle"
done
run bd prime --full
expect_ok
for needle in 'Quality Tools' 'bd lint' 'bd formula list' 'bd human' 'Lifecycle & Hygiene' \
    'Structured Workflows' 'bd defer' 'bd supersede' 'bd stale' 'bd orphans' 'bd preflight' \
    'Conventions' 'conventions'; do
    expect_out "$needle"
done
run bd prime --mcp
expect_ok
expect_out 'ready'
run bd prime --json
expect_out '"content": "'

run bd human
expect_ok
expect_out 'bd ready'
