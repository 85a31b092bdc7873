# bd config set/get/list/unset (stored in the workspace's store).

run bd init --prefix test
run bd config set jira.url https://example.atlassian.net
expect_ok
expect_line 1 "Set jira.url = https://example.atlassian.net"
run bd config get jira.url
expect_ok
expect_same "$OUT" "https://example.atlassian.net"
run bd config set status.custom "review,testing"
run bd config list
expect_ok
expect_out '^Configuration:$'
expect_out '^  jira.url = https://example.atlassian.net$'
expect_out '^  status.custom = review,testing$'
expect_out '^  issue_prefix = test$'
run bd config list --json
expect_out '"jira.url": "https://example.atlassian.net"'
expect_out '"schema_version": 1'
run bd config get issue_prefix
expect_same "$OUT" "test"
run bd config get --json jira.url
expect_out '"value": "https://example.atlassian.net"'
run bd config unset jira.url
expect_ok
run bd config get jira.url
expect_ok
expect_same "$OUT" "jira.url (not set)"
run bd config set issue_prefix other
expect_fail
run bd config set onlykey
expect_fail
# read-only mode refuses writes
run bd --readonly config set a.b c
expect_fail
expect_err 'read-only'
