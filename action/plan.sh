#!/usr/bin/env bash
# `gpuplan plan --detailed-exitcode -o PLAN` on INPUT_PATH; writes the human plan
# beside the plan file and a pull-request comment body, and sets the step's outputs:
# exitcode (0 no changes, 2 changes), has-changes, summary, text-file, html-file (the
# `report html` page of the plan), comment-file.
# An error (exit 1) fails the step, with the diagnostics in the comment body.
set -euo pipefail
: "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
path=${INPUT_PATH:-.}
plan_file=${INPUT_PLAN_FILE:-plan.json}
state=${INPUT_STATE:-.gpuplan/state.json}
text_file="${plan_file%.json}.txt"
html_file="${plan_file%.json}.html"
comment_file="${RUNNER_TEMP:-/tmp}/gpuplan-comment.md"
# Comments are limited to 65,536 characters; keep room for the frame.
limit=60000

read -r -a paths <<< "$path"
set +e
gpuplan --color never plan "${paths[@]}" --state "$state" --detailed-exitcode \
  -o "$plan_file" > "$text_file" 2> "$text_file.err"
code=$?
set -e

if [ "$code" -eq 1 ]; then
  title="gpuplan plan failed"
  body_file="$text_file.err"
else
  title="gpuplan plan"
  body_file="$text_file"
fi
summary=$(grep -m1 -E '^(Plan: |No changes\.)' "$text_file" || true)
# The HTML report of the saved plan, for the artifact (reviewers open it in a browser).
if [ "$code" -ne 1 ]; then
  gpuplan --quiet report html "$plan_file" -o "$html_file" || true
fi

{
  echo "<!-- gpuplan-plan: $path -->"
  echo "### $title: \`$path\`"
  echo
  if [ -n "$summary" ]; then
    echo "**$summary**"
    echo
  fi
  echo "<details><summary>Show the plan</summary>"
  echo
  echo '```diff'
  if [ "$(wc -c < "$body_file")" -gt "$limit" ]; then
    head -c "$limit" "$body_file"
    echo
    echo "... (truncated: the whole plan is in the ${INPUT_ARTIFACT_NAME:-gpuplan-plan} artifact)"
  else
    cat "$body_file"
  fi
  echo '```'
  echo
  echo "</details>"
} > "$comment_file"

if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$comment_file" >> "$GITHUB_STEP_SUMMARY"
fi
{
  echo "exitcode=$code"
  if [ "$code" -eq 2 ]; then echo "has-changes=true"; else echo "has-changes=false"; fi
  echo "summary=$summary"
  echo "text-file=$text_file"
  echo "html-file=$html_file"
  echo "comment-file=$comment_file"
} >> "$GITHUB_OUTPUT"

if [ "$code" -eq 1 ]; then
  cat "$text_file.err" >&2
  exit 1
fi
exit 0
