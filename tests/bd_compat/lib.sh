# Helpers for the bd compatibility scripts; sourced before each script by tests/bd_compat/main.rs.
#
# A script runs commands with `run CMD…` (stdout, stderr and the exit code land in $OUT, $ERR
# and $RC) and then states what it expects with the `expect_*` functions. Every expectation is
# one counted check; a failed one prints the command, its exit code and both streams, and the
# script goes on so one run reports every mismatch. `finish` prints the tally and fails the
# script if any check failed. Every `run` is timed; the slowest command is reported.

set -u

# These scripts match bd's --json as text (`"status": "closed"`), as beads' own scripts do.
# Into a pipe fleet writes it compact; FLEET_JSON_PRETTY=1 is the documented way back to
# beads' indented layout for such scripts (json.sh checks both layouts).
export FLEET_JSON_PRETTY=1

CHECKS=0
FAILS=0
SLOWEST_US=0
SLOWEST_CMD=""
OUT=""
ERR=""
RC=0
LAST=""
# Any single call slower than this is a failure (the contract is "well under 2 s"; this bound
# only catches hangs and pathologies, not ordinary noise).
SANITY_US=10000000

_now_us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }

# run CMD…: runs it with stdin from /dev/null.
run() {
    _run_with_input "" "$@"
}

# run_in TEXT CMD…: runs it with TEXT on stdin.
run_in() {
    local input=$1
    shift
    _run_with_input "$input" "$@"
}

_run_with_input() {
    local input=$1
    shift
    LAST="$*"
    local start end took
    start=$(_now_us)
    if [ -n "$input" ]; then
        printf '%s' "$input" | "$@" >"$SCRATCH/out" 2>"$SCRATCH/err"
        RC=$?
    else
        "$@" >"$SCRATCH/out" 2>"$SCRATCH/err" </dev/null
        RC=$?
    fi
    end=$(_now_us)
    took=$((end - start))
    OUT=$(cat "$SCRATCH/out")
    ERR=$(cat "$SCRATCH/err")
    if [ "$took" -gt "$SLOWEST_US" ]; then
        SLOWEST_US=$took
        SLOWEST_CMD="$LAST"
    fi
    if [ "$took" -gt "$SANITY_US" ]; then
        _fail "finished within the sanity bound (took ${took}us)"
    fi
}

_where() { echo "${BASH_SOURCE[4]##*/}:${BASH_LINENO[3]}"; }

_fail() {
    FAILS=$((FAILS + 1))
    {
        echo "FAIL [$(_where)] expected: $1"
        echo "  command: $LAST"
        echo "  exit:    $RC"
        echo "  stdout:"
        printf '%s\n' "$OUT" | sed 's/^/    | /'
        echo "  stderr:"
        printf '%s\n' "$ERR" | sed 's/^/    | /'
    } >&2
}

_check() { # _check DESCRIPTION STATUS
    CHECKS=$((CHECKS + 1))
    if [ "$2" -ne 0 ]; then _fail "$1"; fi
}

expect_rc() { [ "$RC" -eq "$1" ]; _check "exit code $1" $?; }
expect_ok() { [ "$RC" -eq 0 ]; _check "success (exit 0)" $?; }
expect_fail() { [ "$RC" -ne 0 ]; _check "failure (non-zero exit)" $?; }

# expect_out REGEX / expect_err REGEX: some line of stdout / stderr matches (grep -E).
expect_out() { printf '%s\n' "$OUT" | grep -Eq -- "$1"; _check "stdout matching /$1/" $?; }
expect_err() { printf '%s\n' "$ERR" | grep -Eq -- "$1"; _check "stderr matching /$1/" $?; }
expect_no_out() { ! printf '%s\n' "$OUT" | grep -Eq -- "$1"; _check "no stdout matching /$1/" $?; }
expect_no_err() { ! printf '%s\n' "$ERR" | grep -Eq -- "$1"; _check "no stderr matching /$1/" $?; }
expect_out_empty() { [ -z "$OUT" ]; _check "empty stdout" $?; }
expect_err_empty() { [ -z "$ERR" ]; _check "empty stderr" $?; }
# expect_line N TEXT: line N (1-based) of stdout is exactly TEXT.
expect_line() {
    local got
    got=$(printf '%s\n' "$OUT" | sed -n "${1}p")
    [ "$got" = "$2" ]
    _check "stdout line $1 = '$2' (got '$got')" $?
}
expect_file() { [ -e "$1" ]; _check "file $1 exists" $?; }
expect_no_file() { [ ! -e "$1" ]; _check "no file $1" $?; }
# expect_file_line FILE REGEX: some line of FILE matches.
expect_file_line() { grep -Eq -- "$2" "$1" 2>/dev/null; _check "a line of $1 matching /$2/" $?; }
# expect_same A B: two values are equal.
expect_same() { [ "$1" = "$2" ]; _check "'$1' = '$2'" $?; }

# first_id: the first `<prefix>-<hash>` token of stdout (how beads' tests find a new id).
first_id() { printf '%s\n' "$OUT" | grep -Eo "${PREFIX:-test}-[a-z0-9]+(\.[0-9]+)*" | head -1; }

finish() {
    echo "CHECKS $CHECKS FAILS $FAILS SLOWEST_US $SLOWEST_US SLOWEST_CMD $SLOWEST_CMD"
    [ "$FAILS" -eq 0 ]
}
