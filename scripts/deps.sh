#!/usr/bin/env bash
# Installs the Debian packages flamedb needs, only those that are missing.
# Runs `apt-get update` once, and only when something must be installed.
set -euo pipefail
pkgs=(liblmdb-dev libmicrohttpd-dev libjansson-dev libelf-dev libdw-dev
      liblz4-dev libzstd-dev libcmocka-dev zlib1g-dev libcurl4-openssl-dev
      libprotobuf-c-dev protobuf-c-compiler libxxhash-dev libdeflate-dev pkg-config curl
      gcc g++ clang libclang-rt-dev libre2-dev libiberty-dev make jq prometheus valgrind chromium golang-go python3
      nettle-dev openssl protobuf-compiler python3-protobuf
      clickhouse-server clickhouse-client zookeeper)
# clickhouse-server, clickhouse-client, zookeeper: the cluster tests
# (tests/cluster/, `make cluster-test`, issue 10) start real ClickHouse 18.16
# servers and one ZooKeeper on 127.0.0.1 from generated configs; no service
# is enabled or started by the tests through systemd.
# protobuf-compiler, python3-protobuf: the OTLP contract test speaks OTLP as
# OpenTelemetry's exporters do, with Python classes protoc makes at test time
# from proto/otlp_profiles.proto (tests/integration/test_otlp.sh).
# nettle-dev: SHA-256 of the --auth tokens (nettle is GnuTLS's crypto, already
# in the server through libmicrohttpd's TLS); openssl: the certificate the TLS
# tests make (tests/integration/test_tls.sh).
# clang and its runtimes (libFuzzer, ASan: only recommended by clang, and
# recommends are not installed) build the fuzz harnesses of `make fuzz`.
# Node.js and npm (for the browser tests' playwright-core) may come from
# another package source; install Debian's only when there is no npm at all.
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
