# --json shapes: objects get "schema_version": 1 and sorted keys; arrays are bare;
# BD_JSON_ENVELOPE=1 wraps everything as {"data": …, "schema_version": 1}.

run bd init --prefix test
run bd create "Shape" -l b,a --json
expect_ok
expect_line 1 "{"
expect_out '^  "schema_version": 1,?$'
expect_out '^  "title": "Shape"'
# keys come out sorted: created_at < id < labels < priority < schema_version < status < title
KEYS=$(printf '%s\n' "$OUT" | grep -Eo '^  "[a-z_]+"' | tr -d ' "' | tr '\n' ' ')
SORTED=$(printf '%s\n' $KEYS | sort | tr '\n' ' ')
expect_same "$KEYS" "$SORTED"
ID=$(printf '%s\n' "$OUT" | grep -Eo '"id": "test-[a-z0-9]+"' | grep -Eo 'test-[a-z0-9]+')

# two-space indentation
expect_out '^  "id": "test-'
expect_out '^    "a",?$'

run bd list --json
expect_line 1 "["
expect_line 2 "  {"

expect_out '^    "id": '
expect_no_out 'schema_version'

run env BD_JSON_ENVELOPE=1 bd list --json
expect_ok
expect_line 1 "{"
expect_out '^  "data": \[$'
expect_out '^  "schema_version": 1$'
expect_out "\"id\": \"$ID\""

run env BD_JSON_ENVELOPE=1 bd stats --json
expect_out '^  "data": \{$'
expect_out '"total_issues": 1'

run env BD_JSON_ENVELOPE=1 bd ready --json
expect_out '^  "data": \['

run bd ready --json
expect_line 1 "["

run bd show "$ID" --json
expect_line 1 "["
expect_out '"labels": \['
expect_out '"comment_count": 0'

# Into a pipe, without FLEET_JSON_PRETTY: one compact line, the same fields; --pretty indents.
run env -u FLEET_JSON_PRETTY bd list --json
expect_out '^\[\{"id":"test-'
expect_same "$(printf '%s\n' "$OUT" | wc -l | tr -d ' ')" 1
run env -u FLEET_JSON_PRETTY bd show "$ID" --json
expect_out '"title":"Shape"'
expect_no_out '": '
run env -u FLEET_JSON_PRETTY bd --pretty list --json
expect_line 2 "  {"
run env -u FLEET_JSON_PRETTY bd create "Compact" --json
expect_out '^\{"comment_count":0,"created_at":'
expect_out '"schema_version":1,'
