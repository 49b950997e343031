# test_partitions.sh — storage v2: time partitions (DATA/parts/*.mdb, one
# LMDB file per partition named after its UTC start), answers across
# partition boundaries, retention by whole partitions, kill -9 while writes
# cross partitions, the directory lock, the stored partition length.
#
# The contract these tests check:
#   * `serve --partition DURATION` (whole hours, default 1d) sets the length
#     for a NEW data directory; it is stored; on an existing directory a
#     different length is refused with exit status 2 and a message naming the
#     stored length.
#   * DATA/LOCK, DATA/catalog.mdb, DATA/parts/YYYYMMDDTHHMMZ.mdb each with its
#     -lock file (YYYYMMDDTHHMMZ.N.mdb: shard N of the partition, written by
#     writer N of `serve --writers`); a profile lives in the partition its
#     window START is in.
#   * queries answer the same bytes whatever the number of writers, also
#     when a directory is reopened with another number (a series then lies
#     in several shards of a partition).
#   * queries answer the same bytes whatever the partitioning.
#   * retention drops whole partitions (files and dictionaries) and, in the
#     partition straddling the cutoff, the profiles that started before it.
#   * a second server on a held directory exits at once naming the directory
#     and "pid N"; the lock dies with its process (kill -9).

PT_T0=1793570400   # 2026-11-01 22:00:00 UTC; midnight is PT_T0 + 7200

# pt_part_name EPOCH LENGTH_S — the file of the partition holding EPOCH.
pt_part_name() {
    date -u -d "@$(( $1 / $2 * $2 ))" +%Y%m%dT%H%MZ.mdb
}

# pt_parts DIR — the partition files (not their -lock files), sorted.
pt_parts() {
    local f
    [ -d "$1/parts" ] || return 0
    for f in "$1"/parts/*.mdb; do
        [ -e "$f" ] && basename "$f"
    done | LC_ALL=C sort
}

# pt_check_layout DESC DIR — DATA/LOCK, catalog.mdb, parts/ with a -lock
# file beside every partition, file names YYYYMMDDTHHMMZ.mdb, no data.mdb.
pt_check_layout() {
    local desc=$1 dir=$2 f
    [ -e "$dir/LOCK" ] || fail "$desc: $dir/LOCK missing (layout: LOCK, catalog.mdb, parts/)"
    [ -f "$dir/catalog.mdb" ] || fail "$desc: $dir/catalog.mdb missing"
    [ -d "$dir/parts" ] || { fail "$desc: $dir/parts/ missing; found: $(ls "$dir" | tr '\n' ' ')"; return 1; }
    [ ! -e "$dir/data.mdb" ] || fail "$desc: a single-file data.mdb exists in a v2 directory"
    for f in $(pt_parts "$dir"); do
        [[ "$f" =~ ^[0-9]{8}T[0-9]{4}Z(\.[1-9][0-9]?)?\.mdb$ ]] ||
            fail "$desc: partition file name $f is not YYYYMMDDTHHMMZ[.N].mdb"
        [ -e "$dir/parts/$f-lock" ] || fail "$desc: parts/$f has no $f-lock beside it"
    done
}

# pt_parts_in DIR PREFIX_REGEX — the partition files whose names match.
pt_parts_in() {
    pt_parts "$1" | grep -E "$2" | paste -sd ' '
}

# pt_store_bytes DIR — disk space of catalog.mdb and parts/*: per file the
# smaller of the apparent and the allocated size (a sparse map counts what
# is written; a filesystem's preallocation beyond EOF does not count).
pt_store_bytes() {
    local dir=$1 f s b bs total=0
    [ -f "$dir/catalog.mdb" ] || { echo 0; return 1; }
    for f in "$dir/catalog.mdb" "$dir"/parts/*; do
        [ -f "$f" ] || continue
        read -r s b bs < <(stat -c '%s %b %B' "$f")
        b=$((b * bs))
        total=$((total + (s < b ? s : b)))
    done
    echo "$total"
}

# pt_run_refused DESC ARGS... — runs `flamedb ARGS` (a server that must not
# start) with a bound of ~10 s; sets REF_RC, REF_OUT, REF_ERR.  A process
# still running then is killed and recorded as a failure (rc 999).
pt_run_refused() {
    local desc=$1 pid
    shift
    it_tmp
    local tries=200 listening=0
    : >"$IT_TMP/refused.out"
    : >"$IT_TMP/refused.err"
    "$FLAMEDB" "$@" >"$IT_TMP/refused.out" 2>"$IT_TMP/refused.err" </dev/null &
    pid=$!
    while [ $tries -gt 0 ]; do
        [ -e "/proc/$pid" ] || break
        grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null && break
        if grep -q 'listening on' "$IT_TMP/refused.out" "$IT_TMP/refused.err"; then
            listening=1
            break
        fi
        sleep 0.05
        tries=$((tries - 1))
    done
    if [ $listening = 0 ] && [ $tries -gt 0 ]; then
        wait "$pid"
        REF_RC=$?
    else
        kill -KILL "$pid" 2>/dev/null
        { wait "$pid"; } 2>/dev/null
        REF_RC=999
        if [ $listening = 1 ]; then
            fail "$desc: flamedb $* started (printed 'listening on') instead of refusing; killed it"
        else
            fail "$desc: flamedb $* still running after 10 s (expected it to refuse at once); killed it"
        fi
    fi
    REF_OUT=$(cat "$IT_TMP/refused.out")
    REF_ERR=$(cat "$IT_TMP/refused.err")
}

# ---- a) the same profiles, 1 h and 24 h partitions, the same answers ------

# pt_push START UNTIL KEY MULT QS BODY — an ingest that must succeed, recorded
# as "start<TAB>key<TAB>mult<TAB>stack count" lines in $IT_TMP/pushed.tsv
# (mult: the weight of a count in the answer, 1e7 ns at rate=100).
pt_push() {
    local s=$1 u=$2 key=$3 mult=$4 qs=$5 body=$6 line
    put "$qs&from=$s&until=$u" "$body"
    [ "$PT_RECORD" = 1 ] || return 0
    while IFS= read -r line; do
        [ -n "$line" ] && printf '%s\t%s\t%s\t%s\n' "$s" "$key" "$mult" "$line"
    done <<<"$body" >>"$IT_TMP/pushed.tsv"
}

# Several series (two plain cpu instances, a rated one, a bytes type) with
# windows starting just before, on and after four hour boundaries (one of
# them midnight), some ending past the boundary, one spanning two.
# pt_load_boundaries [FIRST LAST] — the boundaries FIRST..LAST (0 3).
pt_load_boundaries() {
    local bi b off s k=0 first=${1:-0} last=${2:-3}
    for bi in 0 1 2 3; do
        if [ "$bi" -lt "$first" ] || [ "$bi" -gt "$last" ]; then
            k=$((k + 5))
            continue
        fi
        b=$((PT_T0 + bi * 3600))
        for off in -600 -1 0 1 1790; do
            s=$((b + off))
            k=$((k + 1))
            pt_push "$s" $((s + 900)) i1 1 "service=api&instance=i-1" \
"main;serve;handle;parse $((3 + bi + k))
main;serve;gc 1
main;hour$bi;work $k"
            pt_push "$s" $((s + 10)) i2 1 "service=api&instance=i-2" \
"main;serve;handle;render $((2 + k % 5))
main;idle 5"
            pt_push "$s" $((s + 10)) i3 10000000 "service=api&instance=i-3&rate=100" \
"main;serve;handle;parse $((1 + k % 3))
main;spin 2"
            pt_push "$s" $((s + 60)) db 1 "service=db&instance=d-1&type=alloc_space&unit=bytes" \
"main;insert;alloc $((4096 * k))
main;compact;alloc 65536"
        done
    done
    [ "$last" = 3 ] || return 0
    pt_push $((PT_T0 + 3500)) $((PT_T0 + 3500 + 7300)) i1 1 "service=api&instance=i-1" "main;long;window 11"
}

# The ranges asked, "from until": the whole span, then ranges cutting
# partition boundaries (exactly on them, one second around them, mid-hour).
pt_ranges() {
    local t=$PT_T0
    echo "$((t - 3600)) $((t + 5 * 3600))"
    echo "$t $((t + 3600))"
    echo "$((t - 1)) $((t + 1))"
    echo "$((t + 3599)) $((t + 7201))"
    echo "$((t + 1800)) $((t + 9000))"
    echo "$((t + 6600)) $((t + 7200))"
    echo "$((t + 7200)) $((t + 10801))"
    echo "$((t - 601)) $((t + 3599))"
}

# pt_ask OUT NAME PATH [k=v...] — one answer, status line then the bytes.
pt_ask() {
    local out=$1 name=$2
    shift 2
    get "$@"
    { echo "HTTP $STATUS"; cat "$BODY_FILE"; } >"$out/$name"
    [ "$STATUS" = 200 ] || fail "$name: HTTP $STATUS: $(head -c 300 "$BODY_FILE")"
}

# pt_answers OUT — every answer compared between the two partitionings.
pt_answers() {
    local out=$1 from until i=0 sel j
    mkdir -p "$out"
    local sels=('{}' 'api' 'api{instance=~"i-[12]"}' 'api{instance="i-3"}' 'db')
    while read -r from until; do
        i=$((i + 1))
        j=0
        for sel in "${sels[@]}"; do
            j=$((j + 1))
            pt_ask "$out" "r$i.s$j.folded" /api/v1/query "query=$sel" from="$from" until="$until" format=folded
            pt_ask "$out" "r$i.s$j.json" /api/v1/query "query=$sel" from="$from" until="$until" max_nodes=0
        done
        pt_ask "$out" "r$i.top" /api/v1/top query=api from="$from" until="$until" limit=0
        pt_ask "$out" "r$i.series" /api/v1/series from="$from" until="$until"
        pt_ask "$out" "r$i.group" /api/v1/query query=api from="$from" until="$until" group_by=instance max_nodes=0
    done < <(pt_ranges)
    from=$((PT_T0 - 3600)); until=$((PT_T0 + 5 * 3600))
    pt_ask "$out" top.db /api/v1/top query=db from="$from" until="$until" limit=0 order=total
    pt_ask "$out" top.group /api/v1/top query=api from="$from" until="$until" limit=0 group_by=instance
    pt_ask "$out" timeline.600 /api/v1/timeline query=api from="$from" until="$until" step=600
    pt_ask "$out" timeline.1h /api/v1/timeline query=api from=$((PT_T0 - 1800)) until=$((PT_T0 + 4 * 3600 + 1800)) step=1h
    pt_ask "$out" timeline.group /api/v1/timeline query=api from="$from" until="$until" step=1800 group_by=instance
    pt_ask "$out" timeline.rated /api/v1/timeline 'query=api{instance="i-3"}' from=$((PT_T0 - 1)) until=$((PT_T0 + 3 * 3600 + 1)) step=1200
    pt_ask "$out" stability /api/v1/stability query=api from="$from" until="$until" step=1h
    pt_ask "$out" compare /api/v1/compare left=api right=api left_from=$((PT_T0 - 3600)) left_until=$((PT_T0 + 7200)) \
        right_from=$((PT_T0 + 7200)) right_until="$until" limit=0
    pt_ask "$out" labels /api/v1/labels from="$from" until="$until"
    pt_ask "$out" services /api/v1/label/service/values from="$from" until="$until"
}

# pt_expect_folded FROM UNTIL KEY_REGEX — the canonical folded answer
# computed from what was pushed.
pt_expect_folded() {
    awk -F'\t' -v f="$1" -v u="$2" -v k="$3" \
        '$1 >= f && $1 < u && $2 ~ k { split($4, a, " "); printf "%s %.0f\n", a[1], a[2] * $3 }' \
        "$IT_TMP/pushed.tsv" | fold_canon_exact
}

test_partitions_boundaries_answer_the_same() {
    it_tmp
    local one="$IT_TMP/answers.1h" day="$IT_TMP/answers.24h" parts1 parts24 want from until
    # --- 1 h partitions
    PT_RECORD=1
    : >"$IT_TMP/pushed.tsv"
    start_server --partition 1h --retention 0
    pt_load_boundaries
    pt_check_layout "1h server" "$DATA"
    parts1=$(pt_parts_in "$DATA" '^2026110[12]T')
    want="20261101T2100Z.mdb 20261101T2200Z.mdb 20261101T2300Z.mdb 20261102T0000Z.mdb 20261102T0100Z.mdb"
    assert_eq "1h: one partition per hour a window started in" "$want" "$parts1"
    pt_answers "$one"
    # the answers are right, not only equal: plain folded from the pushes
    local i=0
    while read -r from until; do
        i=$((i + 1))
        assert_eq "1h: folded api{instance=~\"i-[12]\"} [$from, $until)" "$(pt_expect_folded "$from" "$until" '^i[12]$')" \
            "$(tail -n +2 "$one/r$i.s3.folded" | fold_canon_exact)"
    done < <(pt_ranges)
    from=$((PT_T0 - 3600)); until=$((PT_T0 + 5 * 3600))
    assert_eq "1h: folded of the rated series (ns)" "$(pt_expect_folded "$from" "$until" '^i3$')" \
        "$(tail -n +2 "$one/r1.s4.folded" | fold_canon_exact)"
    assert_eq "1h: folded of the bytes series" "$(pt_expect_folded "$from" "$until" '^db$')" \
        "$(tail -n +2 "$one/r1.s5.folded" | fold_canon_exact)"
    BODY=$(tail -n +2 "$one/r1.s5.json")
    assert_json "1h: db profiles and unit" '"\(.profiles) \(.unit)"' "20 bytes"
    BODY=$(tail -n +2 "$one/r1.s4.json")
    assert_json "1h: rated profiles and unit" '"\(.profiles) \(.unit)"' "20 nanoseconds"
    # a window starting one second before a boundary stays on its side
    BODY=$(tail -n +2 "$one/r3.s3.json")
    assert_json "1h: [T0-1, T0+1) holds the profiles starting at T0-1 and T0" '.profiles' 4
    stop_server || return
    local dir1=$DATA log1=$LOG

    # --- 24 h partitions, a fresh directory, the same profiles
    PT_RECORD=0
    start_server --partition 24h --retention 0
    pt_load_boundaries
    pt_check_layout "24h server" "$DATA"
    parts24=$(pt_parts_in "$DATA" '^2026110[12]T')
    assert_eq "24h: one partition per UTC day" "20261101T0000Z.mdb 20261102T0000Z.mdb" "$parts24"
    local n1 n24
    n1=$(wc -w <<<"$parts1"); n24=$(wc -w <<<"$parts24")
    assert_ge "1h server has several partition files" 4 "$n1"
    [ "$n24" -lt "$n1" ] || fail "24h server should have fewer partition files than the 1h one: $n24 vs $n1"
    pt_answers "$day"

    local f bad=0
    for f in "$one"/*; do
        f=$(basename "$f")
        if ! cmp -s "$one/$f" "$day/$f"; then
            bad=$((bad + 1))
            [ $bad -le 5 ] && fail "answer $f differs between 1h and 24h partitions:
      1h:  $(head -c 400 "$one/$f" | tr '\n' '|')
      24h: $(head -c 400 "$day/$f" | tr '\n' '|')"
        fi
    done
    [ $bad -eq 0 ] || fail "$bad of $(ls "$one" | wc -l) answers differ between 1h and 24h partitions"
    assert_eq "the same set of answers" "$(ls "$one")" "$(ls "$day")"

    # and the 1 h directory answers the same after a restart
    stop_server || return
    DATA=$dir1 LOG=$log1
    launch_server --partition 1h --retention 0
    pt_ask "$IT_TMP" again.folded /api/v1/query query='{}' from=$((PT_T0 - 3600)) until=$((PT_T0 + 5 * 3600)) format=folded
    cmp -s "$IT_TMP/again.folded" "$one/r1.s1.folded" || fail "1h directory: folded answer changed after a restart"
}

# ---- a') several writers: shard files, the same answers -------------------

# pt_answers_edges OUT — answers over ranges without data, which say where
# the newest and oldest profiles are (store_series_last/first walk shards).
pt_answers_edges() {
    local out=$1
    pt_ask "$out" latest /api/v1/query query=api from=$((PT_T0 + 6 * 3600)) until=$((PT_T0 + 7 * 3600))
    pt_ask "$out" earliest /api/v1/query 'query={}' from=$((PT_T0 - 3 * 3600)) until=$((PT_T0 - 2 * 3600))
    pt_ask "$out" variance /api/v1/variance query=api from=$((PT_T0 - 3600)) until=$((PT_T0 + 5 * 3600)) step=1800
}

test_partitions_writers_answer_the_same() {
    it_tmp
    local one="$IT_TMP/answers.w1" many="$IT_TMP/answers.wN" files hour
    PT_RECORD=0
    start_server --partition 1h --retention 0 --writers 1
    pt_load_boundaries
    pt_answers "$one"
    pt_answers_edges "$one"
    assert_eq "one writer: no shard files" "" "$(pt_parts_in "$DATA" '[.][0-9]+[.]mdb$')"
    stop_server || return

    # three writers for the first half, two for the rest: the hour
    # [T0+1h, T0+2h) gets profiles of the same series from both runs
    start_server --partition 1h --retention 0 --writers 3
    pt_load_boundaries 0 1
    pt_check_layout "3 writers" "$DATA"
    files=$(pt_parts_in "$DATA" '[.][12][.]mdb$')
    [ -n "$files" ] || fail "3 writers: no shard file (YYYYMMDDTHHMMZ.N.mdb) among $(pt_parts "$DATA" | paste -sd ' ')"
    assert_contains "the log says how many writers" "$(cat "$LOG")" "3 writers"
    restart_server --partition 1h --retention 0 --writers 2
    pt_load_boundaries 2 3
    pt_check_layout "2 writers after 3" "$DATA"
    hour=$(pt_part_name $((PT_T0 + 3600)) 3600)
    hour=${hour%.mdb}
    assert_ge "the hour written by both runs has several shard files" 2 \
        "$(pt_parts "$DATA" | grep -c "^$hour")"
    pt_answers "$many"
    pt_answers_edges "$many"
    local f bad=0
    for f in "$one"/*; do
        f=$(basename "$f")
        if ! cmp -s "$one/$f" "$many/$f"; then
            bad=$((bad + 1))
            [ $bad -le 5 ] && fail "answer $f differs between 1 writer and 3 then 2 writers:
      1:   $(head -c 400 "$one/$f" | tr '\n' '|')
      3+2: $(head -c 400 "$many/$f" | tr '\n' '|')"
        fi
    done
    [ $bad -eq 0 ] || fail "$bad of $(ls "$one" | wc -l) answers differ between 1 writer and 3 then 2 writers"
    assert_eq "the same set of answers" "$(ls "$one")" "$(ls "$many")"
    BODY=$(tail -n +2 "$many/latest")
    assert_json "latest found across shards" '.latest.from' $((PT_T0 + 3 * 3600 + 1790))

    # every file checks out, and a restart with one writer answers the same
    stop_server || return
    "$FLAMEDB" check "$DATA" >"$IT_TMP/check.out" 2>&1
    assert_eq "flamedb check on a sharded directory" 0 $?
    launch_server --partition 1h --retention 0 --writers 1
    pt_ask "$IT_TMP" again.folded /api/v1/query query='{}' from=$((PT_T0 - 3600)) until=$((PT_T0 + 5 * 3600)) format=folded
    cmp -s "$IT_TMP/again.folded" "$one/r1.s1.folded" || fail "sharded directory reopened with one writer: folded differs"
}

# ---- b) retention drops whole partitions and their dictionaries ----------

test_partitions_retention_drops_whole_partitions() {
    it_tmp
    local t k s old_starts=() recent_starts=() f
    t=$(now)
    # old: five profiles 10 h to 6 h ago, 1500 stacks of 2 new frames each
    # (15,000 distinct frame names in all)
    for k in 0 1 2 3 4; do
        s=$((t - 36000 + k * 3600))
        old_starts+=("$s")
        awk -v k="$k" 'BEGIN { for (i = 0; i < 1500; i++)
            printf "main;old%d_module;old%d_package.subsystem.Function_%05d;old%d_leaf_helper_%05d %d\n", k, k, i, k, i, i % 7 + 1 }' \
            >"$IT_TMP/old.$k.folded"
    done
    recent_starts=($((t - 7000)) $((t - 5400)) $((t - 3000)) $((t - 600)))
    local edge_old=$((t - 3 * 3600 - 900)) edge_new=$((t - 3 * 3600 + 900))

    push_recent() {
        local i=0 s
        for s in "${recent_starts[@]}"; do
            i=$((i + 1))
            put "service=ret&instance=a&from=$s&until=$((s + 10))" "main;serve;handle $((10 + i))
main;idle $i
main;recent$i;frame 3"
            put "service=ret&instance=b&from=$s&until=$((s + 10))" "main;serve;handle 2"
        done
        put "service=ret&instance=a&from=$edge_new&until=$((edge_new + 10))" "main;edge;new 6"
    }
    recent_folded() {
        printf '%s\n' "main;serve;handle 11" "main;idle 1" "main;recent1;frame 3" "main;serve;handle 12" "main;idle 2" \
            "main;recent2;frame 3" "main;serve;handle 13" "main;idle 3" "main;recent3;frame 3" "main;serve;handle 14" \
            "main;idle 4" "main;recent4;frame 3" "main;serve;handle 8" "main;edge;new 6" | fold_canon_exact
    }

    start_server --partition 1h --retention 0
    for k in 0 1 2 3 4; do
        ingest_file "service=ret&instance=a&from=${old_starts[$k]}&until=$((old_starts[k] + 10))" "$IT_TMP/old.$k.folded"
        assert_status "old profile $k" 200
    done
    put "service=ret&instance=a&from=$edge_old&until=$((edge_old + 10))" "main;edge;old 4"
    push_recent
    pt_check_layout "before retention" "$DATA"
    local old_files=() recent_files=()
    for s in "${old_starts[@]}"; do old_files+=("$(pt_part_name "$s" 3600)"); done
    while read -r f; do recent_files+=("$f"); done < <(for s in "${recent_starts[@]}" "$edge_new"; do pt_part_name "$s" 3600; done | sort -u)
    for f in "${old_files[@]}"; do
        [ -f "$DATA/parts/$f" ] || fail "before retention: old partition parts/$f missing; parts: $(pt_parts "$DATA" | paste -sd ' ')"
    done
    query 'ret{}' from=$((t - 40000)) until=$((t + 1))
    assert_json "everything stored while retention is off" '.profiles' 15
    stop_server || return
    local before_bytes
    before_bytes=$(pt_store_bytes "$DATA") || fail "no catalog.mdb in $DATA"

    # retention runs at start: whole partitions older than 3 h go
    launch_server --partition 1h --retention 3h
    local tries=200 left
    while [ $tries -gt 0 ]; do
        left=""
        for f in "${old_files[@]}"; do [ -e "$DATA/parts/$f" ] && left+=" $f"; done
        [ -z "$left" ] && break
        sleep 0.05
        tries=$((tries - 1))
    done
    for f in "${old_files[@]}"; do
        [ ! -e "$DATA/parts/$f" ] || fail "retention: old partition parts/$f still there"
        [ ! -e "$DATA/parts/$f-lock" ] || fail "retention: parts/$f-lock still there"
    done
    for f in "${recent_files[@]}"; do
        [ -f "$DATA/parts/$f" ] || fail "retention: recent partition parts/$f is gone; parts: $(pt_parts "$DATA" | paste -sd ' ')"
    done
    pt_check_layout "after retention" "$DATA"
    # the straddling partition: the profile started before the cutoff goes
    # (retention may finish in steps: wait, bounded)
    tries=200
    while [ $tries -gt 0 ]; do
        query 'ret{}' from=$((t - 40000)) until=$((t - 3 * 3600))
        [ "$(jqb .profiles)" = 0 ] && break
        sleep 0.05
        tries=$((tries - 1))
    done
    query 'ret{}' from=$((t - 40000)) until=$((t - 3 * 3600))
    assert_json "old range answers nothing" '"\(.profiles) \(.total)"' "0 0"
    query 'ret{}' from=$((t - 40000)) until=$((t - 3 * 3600)) format=folded
    assert_eq "old range: empty folded" "" "$BODY"
    get /api/v1/series from=$((t - 40000)) until=$((t - 3 * 3600))
    assert_json "old range: no series" '.series|length' 0
    query 'ret{}' from=$((t - 40000)) until=$((t + 1)) format=folded
    assert_eq "what is left is exactly the recent data" "$(recent_folded)" "$(fold_canon_exact "$BODY_FILE")"
    local kept="$IT_TMP/kept" fresh="$IT_TMP/fresh"
    mkdir -p "$kept" "$fresh"
    ret_answers() {
        local out=$1 from=$((t - 40000)) until=$((t + 1))
        pt_ask "$out" folded /api/v1/query query='ret{}' from=$from until=$until format=folded
        pt_ask "$out" json /api/v1/query query='ret{}' from=$from until=$until max_nodes=0
        pt_ask "$out" group /api/v1/query query='ret{}' from=$from until=$until max_nodes=0 group_by=instance
        pt_ask "$out" top /api/v1/top query='ret{}' from=$from until=$until limit=0
        pt_ask "$out" series /api/v1/series from=$from until=$until
    }
    ret_answers "$kept"
    stop_server || return
    local kept_bytes fresh_bytes
    kept_bytes=$(pt_store_bytes "$DATA") || fail "no catalog.mdb in $DATA"

    # a store that only ever held the live data
    start_server --partition 1h --retention 3h
    push_recent
    ret_answers "$fresh"
    for f in folded json group top series; do
        cmp -s "$kept/$f" "$fresh/$f" || fail "answer $f differs from a store that only held the recent data:
      kept:  $(head -c 300 "$kept/$f" | tr '\n' '|')
      fresh: $(head -c 300 "$fresh/$f" | tr '\n' '|')"
    done
    stop_server || return
    fresh_bytes=$(pt_store_bytes "$DATA") || fail "no catalog.mdb in $DATA"
    # LMDB files of a few hundred KB differ by tens of pages with the
    # history of their transactions (free pages, when rollups were built):
    # 10 % or 128 KiB.  The dropped data must dwarf that slack, or the
    # comparison would prove nothing.
    local slack=$((fresh_bytes / 10)) diff=$((kept_bytes - fresh_bytes))
    [ $slack -ge 131072 ] || slack=131072
    [ $((before_bytes - fresh_bytes)) -ge $((3 * slack)) ] ||
        fail "the old data took too little room to test with: $before_bytes bytes before retention, $fresh_bytes live"
    [ $diff -ge 0 ] || diff=$((-diff))
    [ $diff -le $slack ] || fail "after retention the store takes $kept_bytes bytes (before: $before_bytes), a store of only the live data $fresh_bytes (allowed difference $slack): dropped partitions' dictionaries not freed?"
}

# ---- c) kill -9 while writes cross partition boundaries ------------------

# pt_cross_worker W N BASEURL H0 — N profiles whose window starts walk across
# three hour boundaries (odd workers forward, even ones backward), windows of
# 10 minutes so some straddle a boundary.  Profile j is "wW;jJ C" plus
# "common;stack 1", C = 1000 W + j + 1.  One line "j C STATUS" per request in
# $IT_TMP/cross.W.
pt_cross_worker() {
    local w=$1 n=$2 h0=$4 i j s c
    BASE=$3
    for ((i = 0; i < n; i++)); do
        j=$i
        [ $((w % 2)) -eq 0 ] && j=$((n - 1 - i))
        s=$((h0 - 1800 + j * 10800 / n + w * 7))
        c=$((1000 * w + j + 1))
        ingest "service=cross&worker=$w&from=$s&until=$((s + 600))" "w$w;j$j $c
common;stack 1"
        echo "$j $c $STATUS" >>"$IT_TMP/cross.$w"
    done
}

test_partitions_kill9_while_crossing_boundaries() {
    # three writers (the workers' series spread over the shards), reopened
    # with the default number (one on a 2-core machine)
    start_server --partition 1h --writers 3
    it_tmp
    local h0 pids=() w tries=600 n=60
    h0=$(( ($(now) / 3600 - 3) * 3600 ))
    for w in 1 2 3 4; do
        pt_cross_worker "$w" "$n" "$BASE" "$h0" &
        pids+=($!)
    done
    while [ $tries -gt 0 ] && [ "$(cat "$IT_TMP"/cross.* 2>/dev/null | grep -c ' 200$')" -lt 80 ]; do
        sleep 0.02
        tries=$((tries - 1))
    done
    kill9_server
    wait "${pids[@]}"
    launch_server

    local from=$((h0 - 3600)) until=$((h0 + 4 * 3600)) stored acked=0 acked_sum=0 j c st missing="" bad
    query 'cross{}' from=$from until=$until format=folded
    assert_status "folded after kill -9" 200 || return
    stored=$BODY
    for w in 1 2 3 4; do
        while read -r j c st; do
            if [ "$st" = 200 ]; then
                acked=$((acked + 1))
                acked_sum=$((acked_sum + c + 1))
                grep -qx "w$w;j$j $c" <<<"$stored" || missing+=" w$w;j$j"
            fi
        done <"$IT_TMP/cross.$w"
    done
    assert_ge "acknowledged before the kill" 80 "$acked"
    [ -z "$missing" ] || fail "acknowledged but lost after kill -9:$missing"
    # anything else stored is a whole unacknowledged profile, stored once
    bad=$(grep -vxE 'w[1-4];j[0-9]+ [0-9]+|common;stack [0-9]+' <<<"$stored" | head -3)
    [ -z "$bad" ] || fail "unexpected stored lines: $bad"
    bad=$(awk '/^w/ { split($1, a, ";j"); w = substr(a[1], 2); if ($2 != 1000 * w + a[2] + 1) print }' <<<"$stored" | head -3)
    [ -z "$bad" ] || fail "stored with a wrong count (duplicated or partial?): $bad"
    local profiles common
    profiles=$(grep -c '^w' <<<"$stored")
    common=$(awk '$1 == "common;stack" { print $2 }' <<<"$stored")
    assert_eq "common;stack counts one per stored profile" "$profiles" "${common:-0}"
    # the series' samples: every acknowledged one, plus whole unacknowledged profiles
    get /api/v1/series 'query=cross{}' from=$from until=$until
    local samples expect_sum
    samples=$(jqb '[.series[].samples]|add // 0')
    expect_sum=$(awk '/^w/ { s += $2 + 1 } END { printf "%.0f", s }' <<<"$stored")
    assert_ge "stored samples >= acknowledged samples" "$acked_sum" "$samples"
    assert_eq "stored samples are whole profiles (sum of the stored ones)" "$expect_sum" "$samples"
    assert_ge "the walk created several partitions" 3 "$(pt_parts "$DATA" | wc -l)"
    pt_check_layout "after kill -9" "$DATA"

    # writing goes on, into the partitions the crash interrupted
    put "service=cross&worker=9&from=$((h0 + 3599))&until=$((h0 + 3610))" "w9;j0 9009"
    put "service=cross&worker=9&from=$((h0 + 7200))&until=$((h0 + 7210))" "common;stack 5"
    query 'cross{worker="9"}' from=$from until=$until
    assert_json "writes after the crash" '"\(.total) \(.profiles)"' "9014 2"
    kill9_server
    launch_server
    query 'cross{}' from=$from until=$until format=folded
    assert_eq "after a second kill -9" "$(printf '%s\n' "$stored" "w9;j0 9009" "common;stack 5" | fold_canon_exact)" "$(fold_canon_exact "$BODY_FILE")"
}

# ---- d) one server per data directory ------------------------------------

test_partitions_one_server_per_directory() {
    start_server --partition 1h
    put "service=lk" $'a;b 3\n'
    [ -e "$DATA/LOCK" ] || fail "no $DATA/LOCK while a server runs"
    local real
    real=$(readlink -f "$DATA")
    pt_run_refused "second server on a held directory" serve --listen 127.0.0.1:0 --data "$DATA" --partition 1h
    [ "$REF_RC" -ne 0 ] || fail "a second server on $DATA exited 0 (expected non-zero)"
    if [[ "$REF_ERR" != *"$DATA"* && "$REF_ERR" != *"$real"* ]]; then
        fail "the refusal should name the directory $DATA on stderr, got [$REF_ERR]"
    fi
    assert_contains "the refusal names the holder's pid" "$REF_ERR" "pid $PID"
    # the holder is unharmed
    get /healthz
    assert_status "first server still serves" 200
    query 'lk{}'
    assert_json "first server's data" '.total' 3
    put "service=lk" $'a;b 4\n'

    # the lock dies with its process
    local old=$PID
    kill9_server
    launch_server --partition 1h
    [ "$PID" != "$old" ] || fail "a new server pid expected"
    query 'lk{}'
    assert_json "acknowledged data after kill -9 and a new owner" '"\(.total) \(.profiles)"' "7 2"
    pt_run_refused "second server after the takeover" serve --listen 127.0.0.1:0 --data "$DATA"
    [ "$REF_RC" -ne 0 ] || fail "a second server on $DATA after the takeover exited 0"
    assert_contains "the refusal names the new holder" "$REF_ERR" "pid $PID"
    # a clean stop releases it too
    stop_server || return
    launch_server --partition 1h
    query 'lk{}'
    assert_json "after a clean stop and start" '.total' 7
}

# ---- e) the partition length is stored ---------------------------------

test_partitions_length_stored_and_mismatch_refused() {
    start_server --partition 2h
    local t s1 s2
    t=$(now)
    s1=$(( (t / 7200 - 2) * 7200 + 3700 ))   # an odd hour: the second half of a 2 h partition
    put "service=len&from=$s1&until=$((s1 + 10))" $'a 1\n'
    pt_check_layout "2h server" "$DATA"
    [ -f "$DATA/parts/$(pt_part_name "$s1" 7200)" ] ||
        fail "expected the 2h partition parts/$(pt_part_name "$s1" 7200); parts: $(pt_parts "$DATA" | paste -sd ' ')"
    [ ! -e "$DATA/parts/$(pt_part_name "$s1" 3600)" ] || fail "a 1h partition file in a 2h directory: $(pt_part_name "$s1" 3600)"
    stop_server || return

    pt_run_refused "a different --partition on an existing directory" \
        serve --listen 127.0.0.1:0 --data "$DATA" --partition 3h
    assert_eq "exit status of a refused --partition" 2 "$REF_RC"
    if ! grep -Eq '(^|[^0-9])(2 ?h|2 ?hours?|7200 ?s?|120 ?m)([^0-9a-z]|$)' <<<"$REF_ERR
$REF_OUT"; then
        fail "the refusal should name the stored length (2h), got [$REF_ERR $REF_OUT]"
    fi

    # the same length is accepted, and so is no flag (the stored one is used)
    launch_server --partition 2h
    query 'len{}' from=$((t - 6 * 3600)) until=$((t + 1))
    assert_json "data kept through the refusal" '.total' 1
    stop_server || return
    launch_server
    s2=$(( (t / 7200 - 3) * 7200 + 3700 ))
    put "service=len&from=$s2&until=$((s2 + 10))" $'b 2\n'
    local want day
    want=$(pt_part_name "$s2" 7200)
    day=$(pt_part_name "$s2" 86400)
    [ -f "$DATA/parts/$want" ] ||
        fail "without --partition the stored 2h is used: expected parts/$want; parts: $(pt_parts "$DATA" | paste -sd ' ')"
    [ "$day" = "$want" ] || [ ! -e "$DATA/parts/$day" ] || fail "without --partition: a 1d partition file $day in a 2h directory"
    query 'len{}' from=$((t - 9 * 3600)) until=$((t + 1))
    assert_json "both profiles" '"\(.total) \(.profiles)"' "3 2"
    stop_server || return

    # 1d and 24h are the same length
    start_server --partition 1d
    stop_server || return
    launch_server --partition 24h
    get /healthz
    assert_status "--partition 24h on a 1d directory" 200
    stop_server || return

    # not whole hours
    it_tmp
    pt_run_refused "--partition 90m" serve --listen 127.0.0.1:0 --data "$IT_TMP/d90m" --partition 90m
    assert_eq "--partition 90m is a usage error" 2 "$REF_RC"
    assert_contains "--partition 90m: message names the flag" "$REF_ERR" "--partition"
}
