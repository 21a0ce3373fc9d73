#!/usr/bin/env bash
# gen_man.sh AWOOOP_BINARY OUT.1 - writes the awooop(1) man page from the
# binary's own help, so the page cannot drift from the options: help2man
# turns `awooop --help` into NAME and DESCRIPTION; each command's `--help`
# becomes a subsection of COMMANDS (its usage text verbatim, its options as
# tagged paragraphs), and the page gets ENVIRONMENT, FILES and EXIT STATUS.
# Called by the build (CMake target `man`); needs help2man.
set -euo pipefail
BIN=$1
OUT=$2
INC=$(mktemp)
trap 'rm -f "$INC"' EXIT

# The commands, in the order `awooop --help` lists them (every indented word
# under "Commands:" but `version`).
mapfile -t CMDS < <("$BIN" --help | awk '/^Commands:/ {on = 1; next}
  on && /^  [a-z]/ {print $1} on && /^$/ {exit}' | grep -v '^version$')
[ ${#CMDS[@]} -gt 0 ] || { echo "gen_man: no commands in '$BIN --help'" >&2; exit 1; }

# One command's --help as roff: the text before "Options:" verbatim (.nf),
# each option line "  --name VALUE   text" as .TP; the --help and exit-code
# lines, the same in every command, are said once (SYNOPSIS, EXIT STATUS).
to_roff() {
  awk '
    function esc(s) { gsub(/\\/, "\\e", s); return s }
    function lead(s) { return s ~ /^[.'"'"']/ ? "\\&" s : s }
    /^Exit codes:/ { next }
    /^  --help +show this help$/ { next } # every command has it: SYNOPSIS
    /^Options:$/ { if (nf) print ".fi"; nf = 0; opts = 1; next }
    opts && /^  --/ {
      line = substr($0, 3)
      split(line, w, " ")
      name = w[1]; arg = ""
      rest = substr(line, length(name) + 1)
      if (rest ~ /^ [A-Z]+ /) { arg = w[2]; rest = substr(rest, length(arg) + 2) }
      sub(/^ +/, "", rest)
      gsub(/-/, "\\-", name)
      print ".TP"
      print "\\fB" name "\\fR" (arg != "" ? " \\fI" arg "\\fR" : "")
      rest = esc(rest)
      gsub(/\|/, "|\\:", rest) # a break point in a|b|c lists
      print lead(rest)
      next
    }
    opts { next }
    {
      if (!nf) { print ".nf"; nf = 1 }
      print lead(esc($0))
    }
    END { if (nf) print ".fi" }
  '
}

{
  cat <<'EOF'
[SYNOPSIS]
.B awooop
.I COMMAND
.RI [ options ]
.br
.B awooop
.I COMMAND
\fB\-\-help\fR

[COMMANDS]
.ad l
Each command parses its own options; every option of \fBserve\fR (and
most of the others) may also be set by the environment variable shown
beside it, and every such variable may instead name a file holding the
value as \fINAME\fR_FILE.
EOF
  for c in "${CMDS[@]}"; do
    echo ".SS \"awooop $c\""
    "$BIN" "$c" --help | to_roff
  done
  cat <<'EOF'

[ENVIRONMENT]
.TP
.B AWOOOP_URL
the server the client commands talk to (default http://127.0.0.1:8080)
.TP
.B AWOOOP_KEY
the API key of the client commands (or AWOOOP_KEY_FILE); never taken from
the command line
.TP
.B AWOOOP_PROJECT
the project of every command that takes \fB\-\-project\fR; without either,
a client command acts on its key's own project (\fBawooop whoami\fR)
.TP
.B AWOOOP_BOOTSTRAP_KEY
a platform\-admin key \fBserve\fR installs on start (make one with
\fBawooop key generate\fR); without it and without any platform\-admin key
in the store, the first start prints a new one once on standard output
.TP
.B AWOOOP_T_<PROJECT>__<NAME>
the value of a tenant's secret reference env:NAME

[FILES]
.TP
.I /etc/awooop/awooop.env
the settings of the packaged service (systemd EnvironmentFile)
.TP
.I /var/lib/awooop/
the packaged service's embedded store (awooop.db) and its key files
(publish\-keys.json, approval\-keys.json)
.TP
.I ./var/
the embedded store of \fBawooop serve\fR run by hand with the defaults

[EXIT STATUS]
0 ok, 1 failed, 2 usage or configuration error, 3 unreachable.
EOF
} >"$INC"

help2man --no-info --no-discard-stderr \
  --name "multi-tenant control plane for AI agent operations" \
  --section 1 --include "$INC" --output "$OUT" "$BIN"
