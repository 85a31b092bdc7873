# Help in bd's (cobra's) layout for every command `bd --help` lists: the command's own summary
# first, its flags under `Flags:` (with `-h, --help  help for NAME`), and bd's global flags
# under `Global Flags:` after them. Also a usage error of every command: exit 1, `Error:`.

run bd --help
expect_ok
expect_out '^Available Commands:'
LISTING=$OUT
COMMANDS=$(printf '%s\n' "$LISTING" | sed -n '/^Available Commands:/,/^$/p' | awk 'NR > 1 && /^  [a-z]/ && $1 != "help" {print $1}')
[ "$(printf '%s\n' "$COMMANDS" | wc -l)" -ge 40 ]
_check "bd --help lists at least 40 commands" $?

for NAME in $COMMANDS; do
    # The listing's summary (before any `[alias: …]`), and the first line of the command's help.
    SUMMARY=$(printf '%s\n' "$LISTING" | awk -v name="$NAME" '$1 == name {sub(/^ +[^ ]+ +/, ""); sub(/ *\[alias.*$/, ""); print; exit}')
    run bd "$NAME" --help
    expect_ok
    FIRST=$(printf '%s\n' "$OUT" | head -1)
    case "$FIRST" in
        "${SUMMARY:0:30}"*) true ;;
        *) false ;;
    esac
    _check "bd $NAME --help starts with its summary '${SUMMARY:0:30}…' (got '$FIRST')" $?
    printf '%s\n' "$OUT" | tr '\n' ' ' | grep -Eq -- " -h, --help +help for $NAME "
    _check "bd $NAME --help: -h, --help  help for $NAME" $?
    FLAGS_AT=$(printf '%s\n' "$OUT" | grep -n '^Flags:$' | cut -d: -f1)
    GLOBAL_AT=$(printf '%s\n' "$OUT" | grep -n '^Global Flags:$' | cut -d: -f1)
    [ -n "$FLAGS_AT" ] && [ -n "$GLOBAL_AT" ] && [ "$FLAGS_AT" -lt "$GLOBAL_AT" ]
    _check "bd $NAME --help: Flags: (line ${FLAGS_AT:-none}) above Global Flags: (line ${GLOBAL_AT:-none})" $?

    run bd "$NAME" --no-such-flag-anywhere
    expect_rc 1
    expect_err '^Error: '
    expect_err 'no-such-flag-anywhere'
done

# a subcommand of a subcommand has the same layout
run bd dep add --help
expect_ok
expect_out '^  -h, --help +help for add$'
expect_out '^Global Flags:$'

# `bd help NAME` is `bd NAME --help`
run bd ready --help
READY_HELP=$OUT
run bd help ready
expect_ok
expect_same "$OUT" "$READY_HELP"

finish
