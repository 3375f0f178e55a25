# shellcheck shell=bash
# Output hygiene shared by the action's scripts (sourced, not run). Everything a pull
# request controls (KDL files, file names, the strings diagnostics quote) passes through
# these before it reaches the runner log, the pull request comment or the job summary:
#   gp_clean       drops terminal escape sequences and control characters
#   gp_inline      percent-encodes a string for one line of Markdown or an HTML comment
#   gp_fence       a code fence longer than any backtick run of a file (CommonMark)
#   gp_log         writes stdin to the runner log with workflow commands switched off

# Terminal escape sequences (CSI, OSC), C0 controls except tab and newline, DEL, the C1
# controls (UTF-8 C2 80..C2 9F) and the bidirectional overrides (U+202A..U+202E,
# U+2066..U+2069, "Trojan source"): none of them has a place in a plan, and each can
# hide or forge text in a terminal, a log viewer or a rendered comment.
gp_clean() {
  LC_ALL=C sed \
    -e $'s/\x1b\\[[0-?]*[ -/]*[@-~]//g' \
    -e $'s/\x1b][^\x07\x1b]*\\(\x07\\|\x1b\\\\\\)//g' \
    -e $'s/\xc2[\x80-\x9f]//g' \
    -e $'s/\xe2\x80[\xaa-\xae]//g' \
    -e $'s/\xe2\x81[\xa6-\xa9]//g' |
    LC_ALL=C tr -d '\000-\010\013-\037\177'
}

# The string $1 made safe for one line of Markdown, a code span and an HTML comment:
# `%`, controls (newlines included), `<`, `>`, backticks, `@`, `&`, `\` and the
# bidirectional overrides become %XX (%uXXXX above 255); the rest is kept.
gp_inline() {
  jq -nr --arg s "$1" '
    def hex2: [(. / 16 | floor), . % 16] | map("0123456789ABCDEF"[.:.+1]) | join("");
    def hex4: [(. / 256 | floor), . % 256] | map(hex2) | join("");
    [$s | explode[]
      | if . < 32 or . == 127 or (. >= 128 and . < 160)
          or . == 37 or . == 60 or . == 62 or . == 96 or . == 64 or . == 38 or . == 92
        then "%" + hex2
        elif (. >= 8234 and . <= 8238) or (. >= 8294 and . <= 8297) then "%u" + hex4
        else [.] | implode end]
    | join("")'
}

# A backtick fence for the contents of file $1: three backticks, or one more than the
# longest run of backticks in it, so no line of it can close the fence.
gp_fence() {
  local longest
  longest=$(LC_ALL=C grep -o '`*' "$1" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
  local n=$((longest >= 3 ? longest + 1 : 3)) fence=""
  while [ "${#fence}" -lt "$n" ]; do fence="$fence\`"; done
  printf '%s' "$fence"
}

# An unguessable token for ::stop-commands::.
gp_token() {
  if command -v openssl >/dev/null 2>&1; then
    openssl rand -hex 16
  else
    od -An -N16 -tx1 /dev/urandom | tr -d ' \n'
    echo
  fi
}

# Copies stdin to stderr, cleaned, between `::stop-commands::TOKEN` and `::TOKEN::`,
# so that no line of it (`::add-mask::`, `::warning file=...::`, `::set-output`, ...)
# is taken by the runner as a workflow command. One stream: the runner reads stdout and
# stderr separately, so the markers and the text must share one to stay in order.
# Lines that still start with `::` or `##[` are prefixed as well, in case a runner
# ignores stop-commands.
gp_log() {
  local token
  token=$(gp_token)
  {
    echo "::stop-commands::$token"
    gp_clean | sed -e 's/^\([[:space:]]*\)\(::\|##\[\)/\1| \2/'
    echo "::$token::"
  } >&2
}
