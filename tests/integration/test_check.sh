# test_check.sh — `flamedb check DIR` (storage/check.c): a read-only
# verifier of a data directory.
#
# The contract these tests check:
#   * exit 0 and "DIR is sound" with a summary of counts for a sound store,
#     also while a server runs and writes on it (no directory lock, LMDB
#     read snapshots), which keeps serving writes; the files are unchanged.
#   * damage made on purpose is reported, one line per problem
#     "parts/FILE.mdb: <key or id>: <what>", exit 1, never a crash (the
#     sanitizer build runs this file too): a flipped byte in a segment (a
#     closed bucket's profiles packed) and in raw blocks (checksums), a
#     truncated partition file (the walk goes on with the others), a
#     damaged string chunk and node chunk (their checksums), a segment naming a series the
#     catalog lacks.  At most 100 problems are printed, then how
#     many more.
#   * a flamedb-4 directory is not damaged: a note that it needs migration,
#     exit 0; flamedb-5 is checked (its version-1 blocks counted as
#     unchecked: they have no checksum) with a note that serve upgrades it.
#   * usage errors exit 2: no DIR, DIR missing, not a flamedb directory.
#
# Damage is made by a small C program built here against liblmdb
# (ck_tool): it finds an entry through LMDB, then xors one byte of its key
# or value in the file itself, at every copy of those bytes (LMDB's free
# pages may hold older copies of a page).

CK_T0=1793570400   # 2026-11-01 22:00:00 UTC
CK_P1=20261101T0000Z.mdb
CK_P2=20261102T0000Z.mdb

# ck_tool — builds $CK_DAMAGE: ckdamage FILE DB INDEX key|value POS MASK
# xors byte POS (negative: from the end) of the key or value of entry INDEX
# (0-based, -1 the last) of database DB in FILE with MASK; prints the key.
ck_tool() {
    it_tmp
    CK_DAMAGE="$IT_TMP/ckdamage"
    [ -x "$CK_DAMAGE" ] && return 0
    cat >"$IT_TMP/ckdamage.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 7) { fprintf(stderr, "usage: ckdamage FILE DB INDEX key|value POS MASK\n"); return 2; }
    long index = strtol(argv[3], NULL, 10), pos = strtol(argv[5], NULL, 10);
    int mask = (int)strtol(argv[6], NULL, 0), want_key = !strcmp(argv[4], "key");
    MDB_env *env; MDB_txn *txn; MDB_dbi dbi; MDB_cursor *cur; MDB_val k, v, fk = { 0, 0 }, fv = { 0, 0 };
    int rc = mdb_env_create(&env);
    if (!rc) rc = mdb_env_set_maxdbs(env, 8);
    if (!rc) rc = mdb_env_set_mapsize(env, 0);
    if (!rc) rc = mdb_env_open(env, argv[1], MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0644);
    if (!rc) rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (!rc) rc = mdb_dbi_open(txn, argv[2], 0, &dbi);
    if (!rc) rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc) { fprintf(stderr, "ckdamage: %s\n", mdb_strerror(rc)); return 1; }
    long i = 0, found = -1;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), i++)
        if (index < 0 || i == index) { fk = k; fv = v; found = i; if (index >= 0) break; }
    if (found < 0) { fprintf(stderr, "ckdamage: no entry %ld in %s\n", index, argv[2]); return 1; }
    MDB_val *t = want_key ? &fk : &fv;
    if (pos < 0) pos += (long)t->mv_size;
    if (pos < 0 || (size_t)pos >= t->mv_size) { fprintf(stderr, "ckdamage: position out of range\n"); return 1; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror("ckdamage"); return 1; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    unsigned char *all = malloc((size_t)size), *want = malloc(t->mv_size);
    rewind(f);
    if (!all || !want || fread(all, 1, (size_t)size, f) != (size_t)size) { perror("ckdamage"); return 1; }
    fclose(f);
    size_t wlen = t->mv_size;
    memcpy(want, t->mv_data, wlen);
    for (size_t j = 0; j < fk.mv_size; j++) printf("%02x", ((unsigned char *)fk.mv_data)[j]);
    printf("\n");
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    int fd = open(argv[1], O_RDWR), hits = 0;
    if (fd < 0) { perror("ckdamage"); return 1; }
    for (unsigned char *h = all; (h = memmem(h, (size_t)(all + size - h), want, wlen)); h++, hits++) {
        unsigned char b = h[pos] ^ (unsigned char)mask;
        if (pwrite(fd, &b, 1, (h - all) + pos) != 1) { perror("ckdamage"); return 1; }
    }
    close(fd);
    if (!hits) { fprintf(stderr, "ckdamage: the bytes are not in the file\n"); return 1; }
    return 0;
}
EOF
    cc -O1 -o "$CK_DAMAGE" "$IT_TMP/ckdamage.c" -llmdb 2>"$IT_TMP/ckdamage.err" ||
        die "cannot build the damage tool (cc, liblmdb-dev): $(head -5 "$IT_TMP/ckdamage.err")"
}

# ck_damage ARGS... — runs the tool; prints the damaged entry's key.
ck_damage() {
    local out
    out=$("$CK_DAMAGE" "$@" 2>&1) || die "ckdamage $*: $out"
    echo "$out"
}

# ck_run ARGS... — flamedb check ARGS; sets CK_RC and CK_OUT (stdout and
# stderr).  A sanitizer report is a failure whatever the exit status.
ck_run() {
    it_tmp
    timeout 120 "$FLAMEDB" check "$@" >"$IT_TMP/check.out" 2>&1 </dev/null
    CK_RC=$?
    CK_OUT=$(cat "$IT_TMP/check.out")
    if grep -Eq 'ERROR: [A-Za-z]*Sanitizer|runtime error:' "$IT_TMP/check.out"; then
        fail "sanitizer report from flamedb check $*:"
        grep -E -A25 'ERROR: [A-Za-z]*Sanitizer|runtime error:' "$IT_TMP/check.out" | head -40 | sed 's/^/      /' >>"$IT_FAILS"
    fi
}

# ck_problems — the problem lines of $CK_OUT (those naming a file under parts/ or catalog.mdb).
ck_problems() {
    grep -E '^(parts/|catalog\.mdb)' <<<"$CK_OUT" | grep -v ': note: '
}

# ck_fill — a server on a new $DATA with 5 series: 4 profiles in the
# partition of 2026-11-01 (series 1-3 rated cpu, their counts distinct so no
# two blocks hold the same bytes; series 4 bytes) and one in 2026-11-02's;
# their rollups built.
ck_fill() {
    start_server --retention 0
    local i
    for i in 1 2 3; do
        put "service=api&instance=i-$i&rate=100&from=$((CK_T0 + i * 600))&until=$((CK_T0 + i * 600 + 10))" \
            "main;work;aVeryDistinctiveFrameName_$i $((i * 7))
main;idle $((i + 1))
"
    done
    put "service=db&type=alloc_space&from=$((CK_T0 + 300))&until=$((CK_T0 + 310))" $'q;r;s 5\n'
    put "service=late&from=$((CK_T0 + 7260))&until=$((CK_T0 + 7270))" $'x;y 2\n'
    assert_ge "rollups built" 10 "$(wait_metric flamedb_rollups_built_total 10)"
}

# ck_sums — checksums of the data files (not LMDB's -lock files).
ck_sums() {
    (cd "$DATA" && find . -name '*.mdb' -type f | LC_ALL=C sort | xargs cksum)
}

# ---- a sound store ---------------------------------------------------------

test_check_sound_store() {
    ck_fill
    stop_server || return
    local before
    before=$(ck_sums)
    ck_run "$DATA"
    assert_eq "exit status on a sound store (output: $CK_OUT)" 0 "$CK_RC"
    assert_eq "no problem lines" "" "$(ck_problems)"
    assert_contains "summary" "$CK_OUT" "$DATA: format flamedb-7, partitions of 24 h: 5 series, "
    assert_contains "summary: partitions" "$CK_OUT" " 2 partitions, "
    # the 5 profiles packed into segments (counted as blocks); each series'
    # hour lies in one 10-minute bucket, so it has no hour rollup of its own
    assert_contains "summary: blocks and rollups" "$CK_OUT" " 5 blocks, 5 rollups, 0 pending, "
    assert_contains "summary: problems" "$CK_OUT" "0 unchecked v1 blocks; 0 problems"
    assert_contains "verdict" "$CK_OUT" "$DATA is sound"
    assert_eq "check changed no data file" "$before" "$(ck_sums)"
    # the server opens it as before
    launch_server --retention 0
    query 'api{}' from=$CK_T0 until=$((CK_T0 + 3600)) format=folded
    assert_contains "answers after check" "$BODY" "main;work;aVeryDistinctiveFrameName_2 140000000"
}

# ---- beside a running server, which keeps serving writes ------------------

test_check_while_serving() {
    ck_fill
    ck_run "$DATA"
    assert_eq "exit status while a server runs (output: $CK_OUT)" 0 "$CK_RC"
    assert_contains "verdict while a server runs" "$CK_OUT" "$DATA is sound"
    assert_contains "summary while a server runs" "$CK_OUT" " 5 series, "

    # writers creating new series while check runs again and again: a block
    # may be newer than the catalog check read first, never reported as damage
    local w pids=() runs=0 bad=0
    for w in 1 2 3 4; do
        (
            for i in $(seq 1 40); do
                ingest "service=busy$w&instance=n$i" "main;w$w;f$i 3"
                [ "$STATUS" = 200 ] || echo "ingest busy$w/$i: HTTP $STATUS" >>"$IT_TMP/busy.err"
            done
        ) &
        pids+=($!)
    done
    while kill -0 "${pids[@]}" 2>/dev/null && [ $runs -lt 200 ]; do
        ck_run "$DATA"
        runs=$((runs + 1))
        if [ "$CK_RC" != 0 ]; then
            bad=$((bad + 1))
            [ $bad -le 2 ] && fail "check during writes, run $runs: exit $CK_RC: $(head -c 600 <<<"$CK_OUT")"
        fi
    done
    wait "${pids[@]}"
    [ ! -s "$IT_TMP/busy.err" ] || fail "writes beside check failed: $(head -3 "$IT_TMP/busy.err")"
    assert_eq "checks during writes that found damage" 0 "$bad"
    assert_ge "checks ran during the writes" 1 "$runs"
    ck_run "$DATA"
    assert_eq "exit status after the writes" 0 "$CK_RC"
    assert_contains "all the series" "$CK_OUT" " 165 series, "

    # the server still takes writes and answers them
    put "service=after&instance=a" $'main;after 9\n'
    query 'after{}' from=now-1h
    assert_json "a write after check" '.total' 9
    [ -e "$DATA/LOCK" ] || fail "the server's LOCK is gone"
    stop_server
}

# ---- a flipped byte in a block ----------------------------------------------

test_check_flipped_byte_in_block() {
    ck_fill
    stop_server || return
    ck_tool
    local key
    # compaction packed each closed 10-minute bucket into a segment (keyed
    # like blocks: series, bucket): entry 1 is series 2 (instance i-2)
    key=$(ck_damage "$DATA/parts/$CK_P1" segments 1 value -1 0x01)
    assert_eq "the damaged segment's key: series 2 at 22:20" \
        "$(printf '%08x%016x%08x' 2 $(((CK_T0 + 1200) * 1000 ^ (1 << 63))) 0)" "$key"
    ck_run "$DATA"
    assert_eq "exit status with a flipped byte (output: $CK_OUT)" 1 "$CK_RC"
    assert_contains "the one problem" "$(ck_problems)" \
        "parts/$CK_P1: segment series 2 bucket 2026-11-01T22:20:00Z: checksum mismatch or not a segment ("
    assert_eq "one problem line" 1 "$(ck_problems | wc -l)"
    assert_contains "summary" "$CK_OUT" " 2 partitions, "
    assert_contains "summary: problems" "$CK_OUT" "; 1 problem"
    assert_contains "verdict" "$CK_OUT" "$DATA is damaged"
}

# ---- a truncated partition: reported, the others still walked ------------

test_check_truncated_partition() {
    ck_fill
    stop_server || return
    local f="$DATA/parts/$CK_P1" size
    size=$(stat -c %s "$f")
    truncate -s $((size / 2)) "$f"
    ck_run "$DATA"
    assert_eq "exit status with a truncated partition (output: $CK_OUT)" 1 "$CK_RC"
    assert_contains "the truncated file is named" "$(ck_problems)" \
        "parts/$CK_P1: truncated: $((size / 2)) bytes, its last commit needs "
    assert_eq "one problem line" 1 "$(ck_problems | wc -l)"
    # the other partition was walked: its one block, and the first's none
    assert_contains "the walk went on" "$CK_OUT" " 2 partitions, "
    assert_contains "the other partition's block" "$CK_OUT" " 1 blocks, "
    # a partition file cut to nothing
    : >"$f"
    ck_run "$DATA"
    assert_eq "exit status with an empty partition file" 1 "$CK_RC"
    assert_eq "an empty file" "parts/$CK_P1: empty (0 bytes)" "$(ck_problems)"
}

# ---- damaged dictionary chunks ------------------------------------------------

test_check_damaged_string_and_node_chunks() {
    ck_fill
    stop_server || return
    ck_tool
    # Chunks carry a checksum (format 2, storage/pdict.h): a byte changed
    # anywhere is found there.  (The layout's own checks, behind a checksum
    # made right again, are unit-tested: tests/unit/test_pdict.c.)
    # the last character of the last string of chunk 0 (a NUL ends it)
    ck_damage "$DATA/parts/$CK_P1" strings 0 value -2 0xff >/dev/null
    # the last byte of node chunk 0 made to continue past the chunk's end
    ck_damage "$DATA/parts/$CK_P1" nodes 0 value -1 0x80 >/dev/null
    ck_run "$DATA"
    assert_eq "exit status with damaged chunks (output: $CK_OUT)" 1 "$CK_RC"
    local p
    p=$(ck_problems)
    [[ "$p" =~ parts/$CK_P1:\ string\ chunk\ 0\ \(ids\ 0\.\.[0-9]+\):\ checksum\ mismatch ]] ||
        fail "no problem naming the string chunk: [$p]"
    [[ "$p" =~ parts/$CK_P1:\ node\ chunk\ 0\ \(ids\ 0\.\.[0-9]+\):\ checksum\ mismatch ]] ||
        fail "no problem naming the node chunk: [$p]"
    assert_eq "two problem lines" 2 "$(wc -l <<<"$p")"
}

# ---- a block naming a series the catalog lacks --------------------------------

test_check_block_of_unknown_series() {
    ck_fill
    stop_server || return
    ck_tool
    local key
    # the first byte of the last segment's key (series 4, the db profile at
    # 22:05, packed in its bucket of 22:00)
    key=$(ck_damage "$DATA/parts/$CK_P1" segments -1 key 0 0x7f)
    assert_eq "the damaged segment's key" "00000004" "${key:0:8}"
    ck_run "$DATA"
    assert_eq "exit status with an unknown series (output: $CK_OUT)" 1 "$CK_RC"
    assert_eq "the one problem" \
        "parts/$CK_P1: segment series 2130706436 bucket 2026-11-01T22:00:00Z: series 2130706436 is not in the catalog (5 series)" \
        "$(ck_problems)"
}

# ---- many problems: the first 100 printed, then how many more --------------

test_check_caps_its_output() {
    start_server --retention 0
    local i t=4102444800 # 2100-01-01: raw blocks, never packed (their buckets have not closed)
    # 120 profiles of one series with the same bytes: one flip damages all
    for i in $(seq 0 119); do
        put "service=many&from=$((t + i * 10))&until=$((t + i * 10 + 10))" $'main;same 4\n'
    done
    stop_server || return
    ck_tool
    ck_damage "$DATA/parts/21000101T0000Z.mdb" blocks 0 value -1 0x02 >/dev/null
    ck_run "$DATA"
    assert_eq "exit status" 1 "$CK_RC"
    assert_eq "problem lines printed" 100 "$(ck_problems | wc -l)"
    assert_contains "what was left out" "$CK_OUT" "... and 20 more problems (the first 100 are shown)"
    assert_contains "summary counts them all" "$CK_OUT" " 120 blocks, "
    assert_contains "summary counts them all" "$CK_OUT" "; 120 problems"
}

# ---- older formats ------------------------------------------------------------

test_check_flamedb4_needs_migration() {
    it_tmp
    DATA=$(mktemp -d "$IT_TMP/data.XXXXXX")
    cp "$REPO/tests/fixtures/flamedb4/data.mdb" "$DATA/"
    ck_run "$DATA"
    assert_eq "exit status on a flamedb-4 directory: not damage (output: $CK_OUT)" 0 "$CK_RC"
    assert_contains "a note" "$CK_OUT" "data.mdb: note: a flamedb-4 directory: not checked; it needs migration to flamedb-7"
    assert_contains "what to run" "$CK_OUT" "flamedb migrate $DATA"
    cmp -s "$REPO/tests/fixtures/flamedb4/data.mdb" "$DATA/data.mdb" || fail "check changed data.mdb"
    [ ! -e "$DATA/catalog.mdb" ] || fail "check made a catalog.mdb"
}

test_check_flamedb5_is_checked() {
    it_tmp
    DATA=$(mktemp -d "$IT_TMP/data.XXXXXX")
    local fx="$REPO/tests/fixtures/flamedb5"
    cp "$fx/catalog.mdb" "$DATA/"
    mkdir "$DATA/parts"
    cp "$fx"/parts/*.mdb "$DATA/parts/"
    local before
    before=$(ck_sums)
    ck_run "$DATA"
    assert_eq "exit status on the flamedb-5 fixture (output: $CK_OUT)" 0 "$CK_RC"
    assert_contains "a note" "$CK_OUT" "catalog.mdb: note: format flamedb-5: flamedb serve upgrades it in place"
    # its 149 blocks and 94 rollups are version 1: nothing to verify them by
    assert_contains "summary" "$CK_OUT" \
        "format flamedb-5, partitions of 24 h: 6 series, 15 label strings, 2 partitions, 756 strings, 1540 nodes, 149 blocks, 94 rollups, 0 pending, 243 unchecked v1 blocks; 0 problems"
    assert_eq "check changed no data file" "$before" "$(ck_sums)"
}

# ---- usage errors: exit 2 ------------------------------------------------------

test_check_usage_errors() {
    it_tmp
    ck_run
    assert_eq "no DIR" 2 "$CK_RC"
    assert_contains "usage" "$CK_OUT" "Usage: flamedb check DIR"
    ck_run "$IT_TMP/a" "$IT_TMP/b"
    assert_eq "two DIRs" 2 "$CK_RC"
    ck_run "$IT_TMP/missing"
    assert_eq "a missing DIR" 2 "$CK_RC"
    assert_contains "says so" "$CK_OUT" "flamedb check: $IT_TMP/missing is not a directory"
    mkdir "$IT_TMP/empty"
    ck_run "$IT_TMP/empty"
    assert_eq "not a flamedb directory" 2 "$CK_RC"
    assert_contains "says so" "$CK_OUT" "is not a flamedb data directory (no catalog.mdb, no data.mdb)"
    ck_run --help
    assert_eq "--help" 0 "$CK_RC"
    assert_contains "--help" "$CK_OUT" "Exit status: 0 sound"
}
