#!/usr/bin/env bash
# Posts INPUT_COMMENT_FILE on the pull request of this run, or updates gpuplan's earlier
# comment for the same configuration (found by its first line, a hidden marker), so a
# pull request carries one current plan per configuration, not one per push.
set -euo pipefail
: "${GITHUB_TOKEN:?GITHUB_TOKEN is not set}"
: "${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"
: "${GITHUB_EVENT_PATH:?GITHUB_EVENT_PATH is not set}"
comment_file=${INPUT_COMMENT_FILE:?INPUT_COMMENT_FILE is not set}
api=${GITHUB_API_URL:-https://api.github.com}

pr=$(jq -r '.pull_request.number // .issue.number // empty' "$GITHUB_EVENT_PATH")
if [ -z "$pr" ]; then
  echo "not a pull request event: nothing to comment on"
  exit 0
fi
marker=$(head -n 1 "$comment_file")

call() {
  curl --silent --show-error --fail --location \
    -H "Authorization: Bearer $GITHUB_TOKEN" \
    -H "Accept: application/vnd.github+json" \
    -H "X-GitHub-Api-Version: 2022-11-28" \
    "$@"
}

existing=$(call "$api/repos/$GITHUB_REPOSITORY/issues/$pr/comments?per_page=100" |
  jq -r --arg m "$marker" '[.[] | select(.body | startswith($m))][0].id // empty')
payload=$(jq -n --rawfile body "$comment_file" '{body: $body}')
if [ -n "$existing" ]; then
  call -X PATCH "$api/repos/$GITHUB_REPOSITORY/issues/comments/$existing" \
    -d "$payload" > /dev/null
  echo "updated comment $existing on pull request #$pr"
else
  call -X POST "$api/repos/$GITHUB_REPOSITORY/issues/$pr/comments" \
    -d "$payload" > /dev/null
  echo "commented on pull request #$pr"
fi
