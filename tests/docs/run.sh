#!/usr/bin/env bash
# run.sh FLAMEDB [FILE.md ...] — docs that run (issue 15): every ```sh block
# (```bash and ```shell alike) of README.md and docs/*.md runs against a real
# server, and every answer the docs show is checked against what the server
# answers.
#
# Default files: README.md and every docs/*.md that has such a block.
#
# Per Markdown file:
#   * a fresh `flamedb serve --listen 127.0.0.1:0 --retention 0` on a temp
#     data directory (retention 0: the examples push profiles with fixed
#     timestamps, which must not expire with the clock of the machine);
#   * a fresh working directory; `../shared` beside it is the repository's
#     `../shared` (so `../shared/data/...` reads as in the docs from the repo
#     root), and `flamedb` is on PATH (the binary under test).  It holds one
#     prepared file, perf.txt (tests/fixtures/perf-script.txt), which a
#     skipped block of docs/api.md makes with perf record; every other file
#     an example reads, an earlier example makes;
#   * its ```sh blocks run in order in ONE bash (set -o pipefail), so files
#     and variables of a block are there for the next ones;
#   * `http://localhost:4040`, `localhost:4040` and `127.0.0.1:4040` in the
#     commands are rewritten to the test server's address.
#
# Commands.  A command is a line, joined with the next ones while it ends in
# `\`, `|`, `&&` or `||`.  Every command must exit 0.  `curl` is a shell
# function around the real one that adds `-sS --fail-with-body` (HTTP >= 400
# fails the command, the body still shows) and refuses a URL holding { } [ ]
# without -g/--globoff (curl would glob them away: `name=api.cpu{env=prod}`
# would become the service `api.cpuenv=prod`).
#
# Shown answers.  A command's expected answer is either
#   * a run of `#` comment lines right after it (no blank line between)
#     that starts with { or [, or that is followed by a blank line or the
#     end of the block (other comments are headings of the next command), or
#   * a ```json, ```text or bare ``` block right after the ```sh block
#     (blank lines only between): the answer of its LAST command.
# When the command ends in `> FILE`, FILE's content is what is compared.
# An answer starting with { or [ is JSON, compared structurally:
#   * objects must have exactly the keys shown; `...` among the keys allows
#     more (`{"a": 1, ...}`); `...` as a value matches anything;
#   * arrays must have exactly the elements shown; `...` as the last element
#     allows more (`[{"name": "x"}, ...]`), `[...]` is any array;
#   * numbers are equal within a relative 1e-9; in a string, `...` matches
#     any text (`{"error": "line 3: ..."}`);
#   * volatile fields (VOLATILE below: times that depend on the clock) are
#     masked: only their presence and null-ness are checked;
#   * an answer with a top-level "error" key is an error on purpose: the
#     command must fail with HTTP >= 400 (curl exit 22) and answer that body.
# Any other answer is text: compared line by line after trimming trailing
# blanks, `...` matching any text (within a line or as lines).
#
# Skipping.  A block that cannot run here (root, perf, a Go service on :6060,
# a program that does not exit) is preceded by the line
#     <!-- doc-test: skip (the reason) -->
# right before its opening fence (invisible in the rendered page).  Keep them
# few; everything else runs.
#
# Output: one line per block, `ok   FILE:LINE`, `FAIL FILE:LINE` (with the
# failing command, its status, its output and the expected answer) or
# `skip FILE:LINE (reason)`, then `doctest: N passed, M failed (K skipped)`;
# the exit status is non-zero when M > 0.
# shellcheck disable=SC2016  # jq programs and the prelude are single-quoted on purpose
set -u
export LC_ALL=C

VOLATILE='["from","until","first","last"]'
CMD_TIMEOUT=${DOCTEST_TIMEOUT:-120}   # seconds for all blocks of one file
# DOCTEST_KEEP=1 keeps the temp directory (per file: plan/ the parsed
# commands and answers, res/N.out|err|rc what each command did, work/,
# server.log, script.sh).

if [ $# -lt 1 ]; then
    echo "usage: $0 /path/to/flamedb [FILE.md ...]" >&2
    exit 2
fi
case $1 in
/*) FLAMEDB=$1 ;;
*) FLAMEDB=$PWD/$1 ;;
esac
shift
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
if [ ! -x "$FLAMEDB" ]; then
    echo "doctest: $FLAMEDB is not an executable" >&2
    echo "doctest: 0 passed, 1 failed (0 skipped)"
    exit 1
fi
for tool in curl jq awk timeout; do
    command -v "$tool" >/dev/null || { echo "doctest: $tool is required" >&2; echo "doctest: 0 passed, 1 failed (0 skipped)"; exit 1; }
done

FILES=()
if [ $# -gt 0 ]; then
    for f in "$@"; do case $f in /*) FILES+=("$f") ;; *) FILES+=("$PWD/$f") ;; esac; done
else
    FILES+=("$REPO/README.md")
    for f in "$REPO"/docs/*.md; do
        grep -Eq '^```(sh|bash|shell)[[:space:]]*$' "$f" && FILES+=("$f")
    done
fi

TOP=$(mktemp -d "${TMPDIR:-/tmp}/flamedb-doctest.XXXXXX")
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; fi
    if [ -n "${DOCTEST_KEEP:-}" ]; then echo "doctest: kept $TOP" >&2; else rm -rf "$TOP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$TOP/bin"
ln -s "$FLAMEDB" "$TOP/bin/flamedb"

PASSED=0 FAILED=0 SKIPPED=0

# ---- JSON answers ----------------------------------------------------------

# Turns the doc's `...` (outside strings) into JSON: "...": "..." where an
# object key stands, "..." elsewhere.
dots_to_json() {
    awk 'BEGIN { RS = "\001" } {
        s = $0; out = ""; instr = 0; esc = 0; depth = 0; last = ""
        n = length(s)
        for (i = 1; i <= n; i++) {
            c = substr(s, i, 1)
            if (instr) {
                out = out c
                if (esc) esc = 0; else if (c == "\\") esc = 1; else if (c == "\"") instr = 0
                continue
            }
            if (c == "\"") { instr = 1; out = out c; last = c; continue }
            if (c == "{" || c == "[") { st[++depth] = c }
            else if (c == "}" || c == "]") { depth-- }
            if (c == "." && substr(s, i, 3) == "...") {
                if (st[depth] == "{" && (last == "{" || last == ",")) out = out "\"...\": \"...\""
                else out = out "\"...\""
                last = "\""; i += 2; continue
            }
            out = out c
            if (c !~ /[ \t\r\n]/) last = c
        }
        printf "%s", out
    }'
}

# The differences between an expected (doc) and an actual JSON document, one
# line each ("at PATH: ..."); nothing when they match.
JQ_DIFF='
def num_eq($a; $b): $a == $b or
    (($a - $b) | if . < 0 then -. else . end) <=
    1e-9 * ([$a, $b] | map(if . < 0 then -. else . end) | max);
# a string of the doc with ... in it: the pieces in order, anything between
def smatch($p; $s):
  ($p | split("...")) as $parts
  | if ($parts | length) == 1 then $p == $s
    else ($parts[0] | length) as $h | ($parts[-1] | length) as $t
      | ($s | startswith($parts[0])) and ($s | endswith($parts[-1])) and ($s | length) >= $h + $t
        and (reduce $parts[1:-1][] as $m ({pos: $h, ok: true};
               if .ok then ($s[.pos:] | index($m)) as $i
                 | if $i == null then {pos: .pos, ok: false} else {pos: (.pos + $i + ($m | length)), ok: true} end
               else . end)
             | .ok and .pos <= ($s | length) - $t)
    end;
def show: tojson | if length > 120 then .[0:117] + "..." else . end;
def d($e; $a; $p):
  if $e == "..." then empty
  elif ($e | type) == "object" then
    if ($a | type) != "object" then "at \($p): expected an object, got \($a | show)"
    else
      ($e | has("...")) as $open
      | ( ($e | keys_unsorted[] | select(. != "...")) as $k
          | if ($a | has($k) | not) then "at \($p).\($k): missing (expected \($e[$k] | show))"
            elif ($vol | index([$k])) != null then
              (if ($e[$k] == null) != ($a[$k] == null) then "at \($p).\($k): expected \($e[$k] | show), got \($a[$k] | show)" else empty end)
            else d($e[$k]; $a[$k]; "\($p).\($k)") end ),
        ( if $open then empty
          else ($a | keys_unsorted[]) as $k
               | select(($e | has($k)) | not)
               | "at \($p).\($k): not in the doc (got \($a[$k] | show))" end )
    end
  elif ($e | type) == "array" then
    if ($a | type) != "array" then "at \($p): expected an array, got \($a | show)"
    else
      (($e | length) > 0 and $e[-1] == "...") as $open
      | (if $open then $e[0:-1] else $e end) as $ee
      | if ($open and ($a | length) < ($ee | length)) or ((($open) | not) and ($a | length) != ($ee | length)) then
          "at \($p): expected \($ee | length)\(if $open then " or more" else "" end) elements, got \($a | length): \($a | show)"
        else range(0; $ee | length) as $i | d($ee[$i]; $a[$i]; "\($p)[\($i)]") end
    end
  elif ($e | type) == "number" and ($a | type) == "number" then
    if num_eq($e; $a) then empty else "at \($p): expected \($e), got \($a)" end
  elif ($e | type) == "string" and ($a | type) == "string" then
    if smatch($e; $a) then empty else "at \($p): expected \($e | show), got \($a | show)" end
  elif $e == $a then empty
  else "at \($p): expected \($e | show), got \($a | show)" end;
d($exp; .; "")'

# json_diff EXPECTED_FILE ACTUAL_FILE — prints the differences; status 0
# when they match, 1 when not, 2 when a document is not JSON.
json_diff() {
    local exp act
    if ! exp=$(dots_to_json <"$1" | jq -c . 2>&1); then
        echo "the doc's answer is not JSON (after ... became wildcards): $exp"
        return 2
    fi
    # jq 1.6 refuses nesting deeper than 256; --stream has no such limit.
    if ! act=$(jq -c . "$2" 2>/dev/null) && ! act=$(jq -nc --stream 'fromstream(inputs)' "$2" 2>/dev/null); then
        echo "the answer is not JSON"
        return 2
    fi
    local out
    out=$(jq -r --argjson exp "$exp" --argjson vol "$VOLATILE" "$JQ_DIFF" <<<"$act" 2>&1) || {
        echo "jq failed: $out"
        return 2
    }
    if [ -n "$out" ]; then
        head -12 <<<"$out"
        [ "$(wc -l <<<"$out")" -gt 12 ] && echo "(and $(($(wc -l <<<"$out") - 12)) more differences)"
        return 1
    fi
    return 0
}

# text_match EXPECTED_FILE ACTUAL_FILE — `...` matches any text, also across
# lines; trailing blanks and trailing empty lines are ignored.
text_match() {
    local act pat
    # every glob character escaped, then ... as *
    pat=$(sed -e 's/[[:space:]]*$//' -e 's/[][\\*?()|+@!]/\\&/g' "$1")
    pat=${pat//.../*}
    act=$(sed 's/[[:space:]]*$//' "$2")
    # shellcheck disable=SC2053
    [[ $act == $pat ]]
}

# ---- parsing ----------------------------------------------------------------

# parse_md FILE DIR — writes DIR/blocks (one line per ```sh block:
# "fenceline<TAB>skip reason") and per command k: DIR/k.cmd, k.line, k.block,
# and when it shows an answer k.exp, k.expline.
parse_md() {
    local file=$1 dir=$2 i state=out blk=-1 k=-1 skip="" prev_html="" after_sh=""
    local -a L
    mapfile -t L <"$file"
    : >"$dir/blocks"
    local -a body bodyline
    local total=${#L[@]}
    for ((i = 0; i < total; i++)); do
        local line=${L[$i]} ln=$((i + 1))
        case $state in
        out)
            if [[ $line =~ ^\`\`\`(sh|bash|shell)[[:space:]]*$ ]]; then
                state="sh"; blk=$((blk + 1)); body=(); bodyline=()
                skip=""
                if [[ $prev_html =~ \<\!--[[:space:]]*doc-test:[[:space:]]*skip[[:space:]]*(\((.*)\))?[[:space:]]*--\> ]]; then
                    skip=${BASH_REMATCH[2]:-no reason given}
                fi
                printf '%s\t%s\n' "$ln" "$skip" >>"$dir/blocks"
            elif [[ $line =~ ^\`\`\`(json|text)?[[:space:]]*$ ]] && [ -n "$after_sh" ] && [ "$k" -ge 0 ] && [ "$(cat "$dir/$k.block")" = "$blk" ]; then
                # the answer of the last command of the sh block just closed
                state=ans
                if [ -e "$dir/$k.exp" ]; then
                    echo "at line $ln: the command at line $(cat "$dir/$k.line") already shows an answer" >"$dir/$k.parseerr"
                fi
                : >"$dir/$k.exp"; echo "$ln" >"$dir/$k.expline"
            elif [[ $line =~ ^\`\`\` ]]; then
                state=other
            fi
            if [[ $line =~ ^[[:space:]]*$ ]]; then :; else after_sh=""; fi
            [[ $line =~ ^[[:space:]]*$ ]] || prev_html=$line
            ;;
        other)
            [[ $line =~ ^\`\`\`[[:space:]]*$ ]] && state=out
            prev_html=""
            ;;
        ans)
            if [[ $line =~ ^\`\`\`[[:space:]]*$ ]]; then state=out; prev_html=""; after_sh=""
            else printf '%s\n' "$line" >>"$dir/$k.exp"; fi
            ;;
        sh)
            if [[ $line =~ ^\`\`\`[[:space:]]*$ ]]; then
                split_block "$dir" "$blk"
                state=out; after_sh=1; prev_html=""
            else
                body+=("$line"); bodyline+=("$ln")
            fi
            ;;
        esac
    done
    [ "$state" = out ] || echo "$file: a code block is not closed" >"$dir/unclosed"
}

# split_block DIR BLOCK — the lines in body/bodyline into commands and answers
# (uses and advances k of parse_md).
split_block() {
    local dir=$1 b=$2 j m=${#body[@]} cont=0 cur=-1 cmt=() cmtline="" cmt_after_cmd=0 last_was_cmd=0
    flush_comments() { # $1 = 1 when the comment run ended the block or met a blank line
        if [ ${#cmt[@]} -gt 0 ] && [ "$cmt_after_cmd" = 1 ] && [ "$cur" -ge 0 ] &&
            { [ "$1" = 1 ] || [[ ${cmt[0]} =~ ^[[:space:]]*[\{\[] ]]; }; then
            if [ -e "$dir/$cur.exp" ]; then
                echo "line $cmtline: the command at line $(cat "$dir/$cur.line") already shows an answer" >"$dir/$cur.parseerr"
            fi
            printf '%s\n' "${cmt[@]}" >"$dir/$cur.exp"
            echo "$cmtline" >"$dir/$cur.expline"
        fi
        cmt=(); cmtline=""; cmt_after_cmd=0
    }
    for ((j = 0; j < m; j++)); do
        local line=${body[$j]} ln=${bodyline[$j]}
        if [ "$cont" = 1 ]; then
            printf '%s\n' "$line" >>"$dir/$cur.cmd"
        elif [[ $line =~ ^[[:space:]]*$ ]]; then
            flush_comments 1
            last_was_cmd=0
            continue
        elif [[ $line =~ ^[[:space:]]*# ]]; then
            if [ ${#cmt[@]} -eq 0 ]; then cmtline=$ln; cmt_after_cmd=$last_was_cmd; fi
            local c=${line#"${line%%[![:space:]]*}"}
            c=${c#\#}; c=${c# }
            cmt+=("$c")
            last_was_cmd=0
            continue
        else
            flush_comments 0 # a heading of this command
            k=$((k + 1)); cur=$k
            printf '%s\n' "$line" >"$dir/$k.cmd"
            echo "$ln" >"$dir/$k.line"
            echo "$b" >"$dir/$k.block"
        fi
        # continued on the next line?
        local t=${line%"${line##*[![:space:]]}"}
        if [[ $t =~ (\\|\||\&\&)$ ]]; then cont=1; else cont=0; last_was_cmd=1; fi
    done
    flush_comments 1
}

# ---- running ----------------------------------------------------------------

start_server() {
    local data=$1 log=$2 tries=300 line
    : >"$log"
    "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$data" --retention 0 >"$log" 2>&1 &
    SERVER_PID=$!
    while [ $tries -gt 0 ]; do
        line=$(grep -o 'listening on http://127\.0\.0\.1:[0-9]*' "$log" | head -1)
        [ -n "$line" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
        tries=$((tries - 1))
    done
    [ -n "$line" ] || return 1
    PORT=${line##*:}
}

stop_server() {
    local rc=0
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" || rc=$?
    SERVER_PID=""
    return $rc
}

# The prelude of every file's shell: the curl wrapper.
PRELUDE='set -o pipefail
curl() {
    local __a __glob=1 __bad=""
    for __a in "$@"; do
        case $__a in
        -g|--globoff) __glob=0 ;;
        --*) ;;
        -*g*) __glob=0 ;;
        esac
    done
    if [ $__glob = 1 ]; then
        for __a in "$@"; do
            case $__a in
            *127.0.0.1:*|*localhost:*|http://*|https://*)
                case $__a in *[\{\}\[\]]*) __bad=$__a ;; esac ;;
            esac
        done
    fi
    if [ -n "$__bad" ]; then
        echo "doc-test: curl would glob the braces or brackets of $__bad (use -g, or -G with --data-urlencode)" >&2
        return 2
    fi
    command curl -sS --fail-with-body --max-time 30 -w "%{stderr}doc-test: HTTP %{http_code}\n" "$@"
}
'

# run_file FILE — one server, one shell, every block; prints the results.
run_file() {
    local file=$1 rel name dir
    rel=${file#"$REPO"/}
    name=$(tr '/.' '__' <<<"$rel")
    dir=$TOP/$name
    mkdir -p "$dir/plan" "$dir/res" "$dir/work" "$dir/data"
    ln -s "$REPO/../shared" "$dir/shared"
    cp "$REPO/tests/fixtures/perf-script.txt" "$dir/work/perf.txt"
    parse_md "$file" "$dir/plan"
    if [ -e "$dir/plan/unclosed" ]; then
        echo "FAIL $rel: $(cat "$dir/plan/unclosed")"
        FAILED=$((FAILED + 1))
        return
    fi
    local nblocks ncmds
    nblocks=$(wc -l <"$dir/plan/blocks")
    ncmds=$(find "$dir/plan" -name '*.cmd' | wc -l)
    [ "$nblocks" -gt 0 ] || return

    # the script: every command of every runnable block, in order
    local script=$dir/script.sh c b skip rewritten
    local -a bline bskip cblock
    local i=0
    while IFS=$'\t' read -r bl sk; do bline[i]=$bl; bskip[i]=$sk; i=$((i + 1)); done <"$dir/plan/blocks"
    for ((c = 0; c < ncmds; c++)); do cblock[c]=$(<"$dir/plan/$c.block"); done

    if ! start_server "$dir/data" "$dir/server.log"; then
        echo "FAIL $rel: the server did not start: $(tail -3 "$dir/server.log")"
        FAILED=$((FAILED + 1))
        SERVER_PID=""
        return
    fi
    {
        printf '%s\n' "$PRELUDE"
        printf 'cd %q || exit 99\n' "$dir/work"
        printf 'export PATH=%q:"$PATH"\n' "$TOP/bin"
        for ((c = 0; c < ncmds; c++)); do
            b=${cblock[c]}
            [ -n "${bskip[$b]}" ] && continue
            rewritten=$(sed -e "s#http://localhost:4040#http://127.0.0.1:$PORT#g" \
                -e "s#localhost:4040#127.0.0.1:$PORT#g" \
                -e "s#127\.0\.0\.1:4040#127.0.0.1:$PORT#g" "$dir/plan/$c.cmd")
            printf ': >%q\n{\n%s\n} >%q 2>%q </dev/null; echo $? >%q\n' "$dir/res/$c.started" "$rewritten" \
                "$dir/res/$c.out" "$dir/res/$c.err" "$dir/res/$c.rc"
        done
        # what the blocks started in the background (a second `flamedb
        # serve ... &`, an agent) ends with the file, not after the run
        printf 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null\n'
    } >"$script"
    timeout -k 5 "$CMD_TIMEOUT" bash --noprofile --norc "$script" >"$dir/script.out" 2>&1
    local script_rc=$?
    local server_rc=0
    kill -0 "$SERVER_PID" 2>/dev/null || server_rc=dead
    stop_server || server_rc=$?

    # the verdicts, block by block
    for ((b = 0; b < nblocks; b++)); do
        if [ -n "${bskip[$b]}" ]; then
            echo "skip $rel:${bline[$b]} (${bskip[$b]})"
            SKIPPED=$((SKIPPED + 1))
            continue
        fi
        local report=""
        for ((c = 0; c < ncmds; c++)); do
            [ "${cblock[c]}" = "$b" ] || continue
            local why
            why=$(check_command "$dir" "$c" "$rel")
            [ -n "$why" ] && report+=$why$'\n'
        done
        if [ -z "$report" ]; then
            echo "ok   $rel:${bline[$b]}"
            PASSED=$((PASSED + 1))
        else
            echo "FAIL $rel:${bline[$b]}"
            printf '%s' "$report"
            FAILED=$((FAILED + 1))
        fi
    done
    if [ $script_rc -ge 124 ]; then
        echo "FAIL $rel: the blocks did not finish within ${CMD_TIMEOUT} s (DOCTEST_TIMEOUT)"
        FAILED=$((FAILED + 1))
    fi
    if [ "$server_rc" != 0 ]; then
        echo "FAIL $rel: the server $([ "$server_rc" = dead ] && echo "died during the examples" || echo "exited with $server_rc on SIGTERM"); its log:"
        tail -8 "$dir/server.log" | sed 's/^/     /'
        FAILED=$((FAILED + 1))
    fi
}

indent() { sed "s/^/$1/"; }

# check_command DIR K REL — prints nothing when command K passed, else why.
check_command() {
    local dir=$1 c=$2 rel=$3 rc out err status line target="" exp="" kind why="" diffs=""
    line=$(cat "$dir/plan/$c.line")
    out=$dir/res/$c.out
    err=$dir/res/$c.err
    if [ ! -e "$dir/res/$c.started" ]; then
        rc="(not reached: an earlier command did not finish in time)"
    elif [ ! -e "$dir/res/$c.rc" ]; then
        rc="(did not finish within the ${CMD_TIMEOUT} s of the file: DOCTEST_TIMEOUT)"
    else
        rc=$(cat "$dir/res/$c.rc")
    fi
    status=$(grep -o 'doc-test: HTTP [0-9]*' "$err" 2>/dev/null | tail -1 | awk '{print $3}')
    # what the command wrote to a file, when it ends in > FILE
    local last
    last=$(tail -1 "$dir/plan/$c.cmd")
    if [[ $last =~ \>[[:space:]]*([^[:space:]\|\&\;\<\>]+)[[:space:]]*$ ]]; then
        target=${BASH_REMATCH[1]}
        case $target in /*) ;; *) target=$dir/work/$target ;; esac
    fi
    local actual=$out
    [ -n "$target" ] && actual=$target
    local want_error=0
    if [ -e "$dir/plan/$c.exp" ]; then
        exp=$dir/plan/$c.exp
        if [[ $(sed -n '/[^[:space:]]/{p;q}' "$exp") =~ ^[[:space:]]*[\{\[] ]]; then
            kind=json
            dots_to_json <"$exp" | jq -e 'type == "object" and has("error")' >/dev/null 2>&1 && want_error=1
        else
            kind=text
        fi
    fi
    if [ -e "$dir/plan/$c.parseerr" ]; then
        why="$(cat "$dir/plan/$c.parseerr")"
    elif [ "$rc" != 0 ] && ! { [ $want_error = 1 ] && [ "$rc" = 22 ]; }; then
        case $rc in
        [0-9]*) why="exit status $rc${status:+ (HTTP $status)}" ;;
        *) why=${rc#(}; why=${why%)} ;;
        esac
    elif [ $want_error = 1 ] && [ "$rc" = 0 ]; then
        why="expected an error answer (HTTP >= 400), got exit 0${status:+ (HTTP $status)}"
    fi
    if [ -z "$why" ] && [ -n "$exp" ]; then
        if [ ! -e "$actual" ]; then
            why="no output file $target"
        elif [ "$kind" = json ]; then
            diffs=$(json_diff "$exp" "$actual") || why="the answer differs from the doc's"
        else
            text_match "$exp" "$actual" || why="the answer differs from the doc's"
        fi
    fi
    [ -n "$why" ] || return 0
    echo "  $rel:$line: $why"
    echo "    command:"
    indent '      ' <"$dir/plan/$c.cmd"
    [ -n "$diffs" ] && { echo "    differences:"; indent '      ' <<<"$diffs"; }
    if [ -s "$actual" ]; then
        echo "    answer${target:+ (in $(basename "$target"))}:"
        head -c 3000 "$actual" | head -30 | indent '      '
        echo
    fi
    if [ -s "$err" ] && grep -qv '^doc-test: HTTP' "$err"; then
        echo "    stderr:"
        grep -v '^doc-test: HTTP' "$err" | head -15 | indent '      '
    fi
    if [ -n "$exp" ]; then
        echo "    expected ($rel:$(cat "$dir/plan/$c.expline")):"
        head -30 "$exp" | indent '      '
    fi
}

for f in "${FILES[@]}"; do
    if [ ! -r "$f" ]; then
        echo "FAIL $f: cannot be read"
        FAILED=$((FAILED + 1))
        continue
    fi
    run_file "$f"
done
echo "doctest: $PASSED passed, $FAILED failed ($SKIPPED skipped)"
[ "$FAILED" -eq 0 ]
