# test_migrate.sh — storage v2 migration of a flamedb-4 data directory (one
# DATA/data.mdb) to the partitioned layout, on `flamedb serve` and by
# `flamedb migrate DIR`, with nothing lost: every answer of the previous
# release (tests/fixtures/flamedb4/answers, re-asked by its make.sh) is the
# same bytes afterwards, after a restart, and after kill -9.  The old file is
# kept as DATA/flamedb-4-backup/data.mdb.
#
# The fixture is never opened in place: each test copies data.mdb into its
# own temp directory.  Its profiles are from 2026-11-01 22:00 to 2026-11-02
# 02:00 UTC, so servers run with --retention 0.

MG_FIXTURE="$REPO/tests/fixtures/flamedb4"
MG_T0=1793570400   # 2026-11-01 22:00:00 UTC
MG_MID=$((MG_T0 + 7200))

# mg_data FILE — a new empty $DATA (with $LOG), once FILE of a fixture is there.
mg_data() {
    it_tmp
    [ -r "$1" ] || die "fixture missing: $1"
    DATA=$(mktemp -d "$IT_TMP/data.XXXXXX")
    LOG="$DATA.log"
    : >"$LOG"
}

# mg_copy — a copy of the fixture's data directory becomes $DATA.
mg_copy() {
    mg_data "$MG_FIXTURE/data.mdb"
    cp "$MG_FIXTURE/data.mdb" "$DATA/data.mdb"
}

# mg_answers OUT — make.sh asks the fixture's queries of the server at $BASE.
mg_answers() {
    local out=$1
    rm -rf "$out"
    if ! bash "$MG_FIXTURE/make.sh" answers "$BASE" "$out" >"$out.log" 2>&1; then
        fail "make.sh answers failed (a query answered an error?): $(head -c 300 "$out.log")"
    fi
}

# mg_same OLD NEW — an answer equals the previous release's: byte for byte,
# except the "samples" fields of JSON answers, which flamedb-6 fixed (the
# previous release gave the value as the number of samples; now a profile
# says its samples or they are null): those are checked by mg_check_samples;
# and the fields added since, beside the old ones.
mg_same() {
    case $1 in
    *.json)
        # aggregation (flamedb-6), top's functions_total and offset (issue 16); series sorted by
        # labels and entropy summed smallest term first (issue 10: answers independent of the
        # layout), so the order of series and entropy's last bits are not compared
        local strip='walk(if type == "object" then del(.samples, .aggregation, .functions_total, .offset)
            | with_entries(if (.key|startswith("entropy")) and (.value|type) == "number"
                           then .value |= (. * 1e12 | round) else . end)
            | if (.series|type) == "array" then .series |= sort_by(.labels|tojson) else . end else . end)'
        [ "$(jq -S -c "$strip" "$1")" = "$(jq -S -c "$strip" "$2")" ]
        ;;
    *) cmp -s "$1" "$2" ;;
    esac
}

# mg_check_samples — what the fixed samples fields say: a series in bytes
# does not know its samples; CPU profiles pushed as samples at a rate keep
# theirs (1968 each for the two api instances over the range, as before).
mg_check_samples() {
    get "/api/v1/series" 'query={service=~"api|db"}' "from=$MG_T0" "until=$((MG_T0 + 4 * 3600))"
    assert_json "series samples" '[.series[]|"\(.labels.type)=\(.samples)"]|sort|unique|join(",")' \
        'alloc_space=null,cpu=1968,cpu=3' || return
    get "/api/v1/query" 'query={service="db"}' "from=$MG_T0" "until=$((MG_T0 + 4 * 3600))"
    assert_json "db query samples" '.samples' 'null'
}

# mg_check_answers DESC [FILE...] — the server's answers equal the previous
# release's (mg_same; all of answers/ unless FILEs are named).
mg_check_answers() {
    local desc=$1 out f bad=0
    shift
    it_tmp
    out=$(mktemp -d "$IT_TMP/answers.XXXXXX")
    mg_answers "$out"
    local files=("$@")
    if [ ${#files[@]} -eq 0 ]; then
        for f in "$MG_FIXTURE"/answers/*; do files+=("$(basename "$f")"); done
    fi
    [ ${#files[@]} -ge 13 ] || [ $# -gt 0 ] || fail "$desc: expected the fixture's 13 answers, found ${#files[@]}"
    for f in "${files[@]}"; do
        if [ ! -e "$out/$f" ]; then
            fail "$desc: no answer $f from make.sh"
            bad=$((bad + 1))
        elif ! mg_same "$MG_FIXTURE/answers/$f" "$out/$f"; then
            bad=$((bad + 1))
            fail "$desc: answer $f differs from the flamedb-4 release's:
      was: $(head -c 400 "$MG_FIXTURE/answers/$f" | tr '\n' '|')
      now: $(head -c 400 "$out/$f" | tr '\n' '|')"
        fi
    done
    [ $bad -eq 0 ]
}

# mg_check_layout DESC — the migrated layout: the old file kept unchanged as
# flamedb-4-backup/data.mdb (and moved away from DATA/data.mdb), catalog.mdb,
# and parts/ with the default 1-day partitions of the fixture's two days.
mg_check_layout() {
    local desc=$1 f
    if [ -f "$DATA/flamedb-4-backup/data.mdb" ]; then
        cmp -s "$MG_FIXTURE/data.mdb" "$DATA/flamedb-4-backup/data.mdb" ||
            fail "$desc: flamedb-4-backup/data.mdb is not the old file unchanged"
    else
        fail "$desc: no backup $DATA/flamedb-4-backup/data.mdb; found: $(cd "$DATA" && find . -maxdepth 2 | LC_ALL=C sort | tr '\n' ' ')"
    fi
    [ ! -e "$DATA/data.mdb" ] || fail "$desc: DATA/data.mdb still there (expected it moved to flamedb-4-backup/)"
    [ -f "$DATA/catalog.mdb" ] || fail "$desc: no $DATA/catalog.mdb"
    if [ -d "$DATA/parts" ]; then
        for f in 20261101T0000Z.mdb 20261102T0000Z.mdb; do
            [ -f "$DATA/parts/$f" ] || fail "$desc: no partition parts/$f (1-day partitions of 2026-11-01 and -02); parts: $(ls "$DATA/parts" | tr '\n' ' ')"
            [ -e "$DATA/parts/$f-lock" ] || fail "$desc: parts/$f has no -lock file beside it"
        done
    else
        fail "$desc: no $DATA/parts/"
    fi
}

# mg_state — a fingerprint of the migrated layout (names and the backup).
mg_state() {
    (cd "$DATA" && find . -name '*.mdb' -not -path './parts/*' | LC_ALL=C sort)
    ls "$DATA/parts" 2>/dev/null
    [ ! -f "$DATA/flamedb-4-backup/data.mdb" ] || cksum <"$DATA/flamedb-4-backup/data.mdb"
}

# ---- a) serve opens a flamedb-4 directory: migrated, same answers ------

test_migrate_on_serve() {
    mg_copy
    launch_server --retention 0
    mg_check_answers "served after migration"
    mg_check_samples
    [ -e "$DATA/LOCK" ] || fail "no $DATA/LOCK while the server runs"
    mg_check_layout "after serve"
    # a bytes type, deep stacks and pprof types came through (details of the above)
    query 'db' from=$MG_T0 until=$((MG_T0 + 4 * 3600))
    assert_json "db: bytes, 48 profiles" '"\(.unit) \(.profiles)"' "bytes 48"
    query 'api{instance="i-3"}' from=$MG_T0 until=$((MG_T0 + 4 * 3600)) format=folded
    assert_eq "deep stack of 300 frames" "$(seq -s ';' 1 300 | sed 's/\([0-9]*\)/f\1/g') 3" "$BODY"
    stop_server
}

# ---- b) flamedb migrate DIR, then serve; migrate again: nothing to do ----

test_migrate_command() {
    mg_copy
    local out="$IT_TMP/migrate.out" rc msg
    timeout 60 "$FLAMEDB" migrate "$DATA" >"$out" 2>&1 </dev/null
    rc=$?
    assert_eq "flamedb migrate exit status" 0 "$rc"
    msg=$(cat "$out")
    [ -n "$msg" ] || fail "flamedb migrate printed nothing (expected what it migrated)"
    assert_not_contains "flamedb migrate: not 'nothing to migrate' on a flamedb-4 directory" "$msg" "nothing to migrate"
    mg_check_layout "after flamedb migrate"
    local before
    before=$(mg_state)

    launch_server --retention 0
    mg_check_answers "served after flamedb migrate"
    assert_eq "serve does not migrate again" "$before" "$(mg_state)"
    stop_server || return

    timeout 60 "$FLAMEDB" migrate "$DATA" >"$out" 2>&1 </dev/null
    rc=$?
    msg=$(cat "$out")
    assert_eq "flamedb migrate on a migrated directory: exit status" 0 "$rc"
    grep -Eqi 'nothing to migrate' <<<"$msg" ||
        fail "flamedb migrate on a migrated directory should say there is nothing to migrate, got [$msg]"
    assert_eq "a second migrate changes nothing" "$before" "$(mg_state)"
    [ ! -e "$DATA/flamedb-4-backup/flamedb-4-backup" ] || fail "a second migrate made a backup of the backup"

    launch_server --retention 0
    mg_check_answers "after a second flamedb migrate"
}

# ---- c) the migration is durable, and the migrated store takes writes ----

test_migrate_durable_and_writable() {
    mg_copy
    launch_server --retention 0
    mg_check_answers "first open" || return
    mg_check_layout "first open"
    stop_server || return
    local before
    before=$(mg_state)
    launch_server --retention 0
    mg_check_answers "after a restart"
    assert_eq "a restart does not migrate again" "$before" "$(mg_state)"

    # new profiles: into a migrated partition (stacks the old dictionary
    # knows and a new one), and into a partition the migration did not make
    put "service=api&instance=i-1&type=cpu&rate=100&from=$((MG_MID + 60))&until=$((MG_MID + 70))" \
        $'main;idle 1\nmain;migrated;new 2\n'
    put "service=fresh&instance=f-1" $'x;y 5\n'
    local want
    want=$(printf '%s\n' "$(cat "$MG_FIXTURE/answers/query_cross_midnight.folded")" \
        "main;idle 10000000" "main;migrated;new 20000000" | fold_canon_exact)
    check_new() {
        local desc=$1
        query '{instance="i-1"}' from=$((MG_MID - 1800)) until=$((MG_MID + 1800)) format=folded
        assert_status "$desc: folded" 200
        assert_eq "$desc: a write merged with the migrated profiles" "$want" "$(fold_canon_exact "$BODY_FILE")"
        query 'fresh{}' from=now-1h
        assert_json "$desc: a write after now" '"\(.total) \(.profiles)"' "5 1"
        # what the writes did not touch answers as before
        mg_check_answers "$desc" query_db.json query_gosort.folded
    }
    check_new "after new writes"
    # acknowledged writes survive kill -9
    kill9_server
    launch_server --retention 0
    check_new "after kill -9"
    restart_server
    check_new "after another restart"
}

# ---- kill -9 while the migration may be running -------------------------

# A server killed at once, or a few moments after it started migrating,
# must leave a directory that still migrates (or is migrated) with nothing
# lost.  Where the kill lands depends on timing; every outcome must pass.
test_migrate_survives_kill9_during_migration() {
    local d pid
    for d in 0 0.01 0.03 0.1; do
        mg_copy
        "$FLAMEDB" serve --listen 127.0.0.1:0 --data "$DATA" --retention 0 >>"$LOG" 2>&1 </dev/null &
        pid=$!
        sleep "$d"
        kill -KILL "$pid" 2>/dev/null
        _wait_exit "$pid" 30
        { wait "$pid"; } 2>/dev/null
        launch_server --retention 0
        mg_check_answers "killed after ${d}s, then served"
        mg_check_layout "killed after ${d}s, then served"
        stop_server || return
    done
}

# ---- e) a flamedb-5 directory (storage v2 before samples were kept) -----
#
# Upgraded in place on open: its blocks stay and are read as they are, its
# rollups (which summed values into "samples") are dropped and rebuilt by
# compaction.  Answers are those of the flamedb-4 fixture (same profiles),
# before and after the rebuild, and after a restart.

MG_FIXTURE5="$REPO/tests/fixtures/flamedb5"

mg_copy5() {
    mg_data "$MG_FIXTURE5/catalog.mdb"
    cp "$MG_FIXTURE5/catalog.mdb" "$DATA/"
    mkdir "$DATA/parts"
    cp "$MG_FIXTURE5"/parts/*.mdb "$DATA/parts/"
}

test_upgrade_flamedb5_in_place() {
    mg_copy5
    launch_server --retention 0
    mg_check_answers "flamedb-5 served" || return
    mg_check_samples
    assert_ge "rollups rebuilt (the fixture had 94)" 94 "$(wait_metric flamedb_rollups_built_total 94)"
    mg_check_answers "after the rollups were rebuilt"
    mg_check_samples
    stop_server
    launch_server --retention 0
    sleep 0.5
    get /metrics
    assert_eq "a second open resets nothing" 0 "$(metric flamedb_rollups_built_total)"
    mg_check_answers "reopened"
    stop_server
}

# ---- flamedb-6's first formats ------------------------------------------------
#
# tests/fixtures/flamedb6-v1: a flamedb-6 directory of the binary before
# dictionary format 2 and segments version 2 (storage/pdict.h,
# storage/segment.c), every bucket packed.  Served as it is: the flamedb-4
# fixture's answers; then new stacks, names and a series into its old
# partition (its dictionaries stay format 1, the new bucket is packed as
# version 2 beside the old ones), check finds it sound, and after a restart
# the answers are the same and the new profile reads back.

MG_FIXTURE6="$REPO/tests/fixtures/flamedb6-v1"

test_flamedb6_first_formats_read() {
    mg_data "$MG_FIXTURE6/catalog.mdb"
    cp "$MG_FIXTURE6/catalog.mdb" "$DATA/"
    mkdir "$DATA/parts"
    cp "$MG_FIXTURE6"/parts/*.mdb "$DATA/parts/"
    local out
    out=$("$FLAMEDB" check "$DATA" 2>&1)
    assert_contains "check notes the older format" "$out" "format flamedb-6: flamedb serve marks it flamedb-7 at open"
    launch_server --retention 0
    mg_check_answers "flamedb-6's first formats served" || return
    mg_check_samples
    local late="main;late_new_frame;leaf_a 5
main;serve;handle;parse 2
main;late_new_frame;late_other;leaf_b 7"
    put "service=late&instance=l-1&from=$((MG_T0 + 600))&until=$((MG_T0 + 610))" "$late"
    assert_ge "the late bucket compacted" 1 "$(wait_metric flamedb_rollups_built_total 1)"
    query '{service="late"}' "from=$MG_T0" "until=$((MG_T0 + 3600))" format=folded
    assert_status "late query" 200
    assert_eq "the late profile, served" "$(fold_canon <<<"$late")" "$(fold_canon <<<"$BODY")"
    stop_server
    out=$("$FLAMEDB" check "$DATA" 2>&1)
    assert_eq "check after adding to the old partitions (output: $out)" 0 "$?"
    assert_contains "served, it is flamedb-7: a flamedb-6 binary refuses it" "$out" "format flamedb-7,"
    launch_server --retention 0
    # all but the listings, which now name the new series too
    mg_check_answers "reopened after adding" compare.json query_api.folded query_api.json \
        query_cross_midnight.folded query_db.json query_gosort.folded query_group.json stability.json timeline.json \
        top.json || return
    query '{service="late"}' "from=$MG_T0" "until=$((MG_T0 + 3600))" format=folded
    assert_eq "the late profile, reopened" "$(fold_canon <<<"$late")" "$(fold_canon <<<"$BODY")"
    stop_server
}
