#!/usr/bin/env bash
# Posts INPUT_COMMENT_FILE on the pull request of this run, or updates gpuplan's earlier
# comment for the same configuration, so a pull request carries one current plan per
# configuration, not one per push. The earlier comment is the first one, across all
# pages of the pull request's comments, that was written by the action's own identity
# (INPUT_COMMENT_AUTHOR, default `github-actions[bot]`, the login GITHUB_TOKEN posts
# as) and whose first line is the hidden marker: a comment of anyone else carrying the
# same marker is never edited.
set -euo pipefail
: "${GITHUB_TOKEN:?GITHUB_TOKEN is not set}"
: "${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"
: "${GITHUB_EVENT_PATH:?GITHUB_EVENT_PATH is not set}"
comment_file=${INPUT_COMMENT_FILE:?INPUT_COMMENT_FILE is not set}
author=${INPUT_COMMENT_AUTHOR:-github-actions[bot]}
api=${GITHUB_API_URL:-https://api.github.com}
per_page=100
max_pages=1000

pr=$(jq -r '.pull_request.number // .issue.number // empty' "$GITHUB_EVENT_PATH")
if [ -z "$pr" ]; then
  echo "not a pull request event: nothing to comment on"
  exit 0
fi
if ! [[ $pr =~ ^[0-9]+$ ]]; then
  echo "pull request number is not a number" >&2
  exit 1
fi
marker=$(head -n 1 "$comment_file")

call() {
  curl --silent --show-error --fail --location \
    -H "Authorization: Bearer $GITHUB_TOKEN" \
    -H "Accept: application/vnd.github+json" \
    -H "X-GitHub-Api-Version: 2022-11-28" \
    "$@"
}

# Every page of the pull request's comments, until one has fewer than $per_page.
existing=""
page=1
while [ "$page" -le "$max_pages" ]; do
  listing=$(call "$api/repos/$GITHUB_REPOSITORY/issues/$pr/comments?per_page=$per_page&page=$page")
  if ! jq -e 'type == "array"' > /dev/null 2>&1 <<< "$listing"; then
    echo "unexpected answer listing the comments of pull request #$pr (page $page)" >&2
    exit 1
  fi
  existing=$(jq -r --arg m "$marker" --arg a "$author" '
    [.[] | select((.user.login // "") == $a
                  and ((.body // "") | split("\n")[0] | rtrimstr("\r")) == $m
                  and (.id | type) == "number")][0].id // empty' <<< "$listing")
  if [ -n "$existing" ] || [ "$(jq 'length' <<< "$listing")" -lt "$per_page" ]; then
    break
  fi
  page=$((page + 1))
done

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
