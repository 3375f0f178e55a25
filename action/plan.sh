#!/usr/bin/env bash
# `gpuplan plan --detailed-exitcode -o PLAN` on INPUT_PATH; writes the human plan
# beside the plan file and a pull-request comment body, and sets the step's outputs:
# exitcode (0 no changes, 2 changes), has-changes, summary, text-file, html-file (the
# `report html` page of the plan), comment-file.
# An error (exit 1) fails the step, with a digest of the diagnostics (code, file, line,
# column, message; no source excerpts, nothing of files outside the configuration) in
# the comment body and the log.
# What a pull request controls is made safe on the way out (action/lib.sh): control
# characters and escape sequences are dropped, the plan sits in a code fence longer than
# any backtick run in it, the configuration path is percent-encoded where it appears
# outside the fence, and the runner log is written with workflow commands stopped.
set -euo pipefail
: "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=action/lib.sh
. "$here/lib.sh"
path=${INPUT_PATH:-.}
plan_file=${INPUT_PLAN_FILE:-plan.json}
state=${INPUT_STATE:-.gpuplan/state.json}
text_file="${plan_file%.json}.txt"
html_file="${plan_file%.json}.html"
comment_file="${RUNNER_TEMP:-/tmp}/gpuplan-comment.md"
body_file="$comment_file.body"
# Comments are limited to 65,536 characters; keep room for the frame.
limit=60000

read -r -a paths <<< "$path"
set +e
gpuplan --color never plan "${paths[@]}" --state "$state" --detailed-exitcode \
  -o "$plan_file" > "$text_file" 2> "$text_file.err"
code=$?
set -e

# Whether file $1 lies inside the configuration: its real path (links resolved) is one
# of the configuration paths or inside one of its folders, and inside the workspace.
roots=()
for p in "${paths[@]}"; do
  if r=$(realpath -e -- "$p" 2>/dev/null); then roots+=("$r"); fi
done
workspace=""
if [ -n "${GITHUB_WORKSPACE:-}" ]; then
  workspace=$(realpath -e -- "$GITHUB_WORKSPACE" 2>/dev/null || echo /nonexistent)
fi
inside() {
  local f r
  f=$(realpath -e -- "$1" 2>/dev/null) || return 1
  if [ -n "$workspace" ] && [[ $f != "$workspace"/* ]]; then return 1; fi
  for r in "${roots[@]}"; do
    if [ "$f" = "$r" ] || [[ $f == "$r"/* ]]; then return 0; fi
  done
  return 1
}

# The digest of a failed plan: `gpuplan validate --format json` gives the diagnostics
# as data; only those of files inside the configuration are shown, without source
# excerpts. A failure after validation (the checker, the renderer, the state) shows the
# code and first message line of each of gpuplan's diagnostics.
digest() {
  local json="$text_file.diagnostics.json" b f allowed=()
  gpuplan --color never validate --format json "${paths[@]}" > "$json" 2> /dev/null || true
  if jq -e '.error_count > 0' "$json" > /dev/null 2>&1; then
    while IFS= read -r b; do
      [ -n "$b" ] || continue
      f=$(printf '%s' "$b" | base64 -d)
      if inside "$f"; then allowed+=("$b"); fi
    done < <(jq -r '[.diagnostics[].file | select(. != null)] | unique[] | @base64' "$json")
    jq -r --argjson ok "$(printf '%s\n' "${allowed[@]}" | jq -Rn '[inputs | select(. != "")]')" '
      def vis: [explode[] | if . == 10 then 92, 110 elif . == 9 then 32
        elif . < 32 or (. >= 127 and . < 160) then 63 else . end] | implode;
      def shown: .file == null or ((.file | @base64) as $b | any($ok[]; . == $b));
      [.diagnostics[] | select(shown)] as $d
      | ([.diagnostics[] | select(shown | not)] | length) as $hidden
      | ($d[] | "\(.severity)[\(.code)]"
          + (if .file then " \(.file | vis):\(.line // 0):\(.column // 0)" else "" end)
          + ": \(.message | vis)"),
        (if $hidden > 0 then "(\($hidden) diagnostic(s) of files outside the configuration not shown)" else empty end)
    ' "$json"
  else
    grep -E '^ *(GP[0-9]+|(×|⚠|☞) .*)$' "$text_file.err" || true
  fi
  grep -m1 -E '^no plan: ' "$text_file.err" || true
}

if [ "$code" -eq 1 ]; then
  title="gpuplan plan failed"
  digest | gp_clean > "$body_file"
else
  title="gpuplan plan"
  gp_clean < "$text_file" > "$body_file"
fi
summary=$(grep -m1 -E '^(Plan: [0-9]+ to add, [0-9]+ to change, [0-9]+ to destroy\.|No changes\. The applied state matches the configuration\.)$' "$text_file" || true)
# The HTML report of the saved plan, for the artifact (reviewers open it in a browser).
if [ "$code" -ne 1 ]; then
  gpuplan --quiet --color never report html "$plan_file" "${paths[@]}" --state "$state" -o "$html_file" 2> "$html_file.err" ||
    gp_log < "$html_file.err"
fi

if [ "$(wc -c < "$body_file")" -gt "$limit" ]; then
  head -c "$limit" "$body_file" > "$body_file.cut"
  {
    echo
    echo "... (truncated: the whole plan is in the ${INPUT_ARTIFACT_NAME:-gpuplan-plan} artifact)"
  } | gp_clean >> "$body_file.cut"
  mv "$body_file.cut" "$body_file"
fi
# The path outside the fence: percent-encoded (no newline, control, `<`, `>`, backtick,
# `@`), so it can close neither the marker's HTML comment nor the heading's code span;
# a very long one is shortened in the heading and hashed in the marker.
shown_path=$(gp_inline "$path")
key=$shown_path
if [ "${#shown_path}" -gt 200 ]; then
  key="sha256:$(printf '%s' "$path" | sha256sum | cut -d' ' -f1)"
  shown_path="${shown_path:0:200}..."
fi
fence=$(gp_fence "$body_file")
{
  echo "<!-- gpuplan-plan: $key -->"
  echo "### $title: \`$shown_path\`"
  echo
  if [ -n "$summary" ]; then
    echo "**$summary**"
    echo
  fi
  echo "<details><summary>Show the plan</summary>"
  echo
  echo "${fence}diff"
  cat "$body_file"
  if [ -n "$(tail -c 1 "$body_file")" ]; then echo; fi
  echo "$fence"
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
  gp_log < "$body_file"
  exit 1
fi
exit 0
