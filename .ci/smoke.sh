#!/usr/bin/env bash
# Production smoke test: the README's "Production" commands on a copy of this checkout.
#   npm ci --omit=dev && npm run build && node dist/sync-server/cli.js
# in a temporary folder (no dev dependencies: no tsx, no vitest), with an embedded PGlite database
# (whatever DATABASE_URL says) on a free loopback port; checks /healthz, that a second server on the
# same port exits at once with code 3 (EADDRINUSE), and that SIGTERM ends it promptly with code 0.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work"
cd "$work"
echo "smoke: npm ci --omit=dev in $work"
npm ci --omit=dev --no-audit --no-fund >/dev/null
if [ -e node_modules/.bin/tsx ] || [ -e node_modules/vitest ]; then echo "smoke: dev dependencies were installed" >&2; exit 1; fi
npm run build >/dev/null

port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
env -u DATABASE_URL -u DATABASE_SCHEMA PORT=$port HOST=127.0.0.1 DATA_DIR="$work/data" LOG_LEVEL=warn node dist/sync-server/cli.js >"$work/server.log" 2>&1 &
server_pid=$!
ok=
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$port/healthz" >"$work/health.json" 2>/dev/null; then ok=1; break; fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.5
done
if [ -z "$ok" ]; then echo "smoke: the built server did not answer /healthz" >&2; cat "$work/server.log" >&2; exit 1; fi
grep -q '"ok":true' "$work/health.json" || { echo "smoke: /healthz answered $(cat "$work/health.json")" >&2; exit 1; }
echo "smoke: /healthz $(cat "$work/health.json")"

# A second server on the same port: exit code 3 at once, with a message.
set +e
started=$(date +%s%N)
env -u DATABASE_URL -u DATABASE_SCHEMA PORT=$port HOST=127.0.0.1 DATA_DIR="$work/data2" LOG_LEVEL=warn timeout 20 node dist/sync-server/cli.js >"$work/second.log" 2>&1
code=$?
set -e
took=$(( ($(date +%s%N) - started) / 1000000 ))
if [ "$code" != 3 ] || ! grep -q 'already in use' "$work/second.log"; then echo "smoke: a second server on port $port exited $code after ${took} ms: $(cat "$work/second.log")" >&2; exit 1; fi
echo "smoke: port in use: exit code 3 after ${took} ms"

started=$(date +%s%N)
kill -TERM "$server_pid"
for _ in $(seq 1 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then echo "smoke: the server still runs 10 s after SIGTERM" >&2; exit 1; fi
set +e
wait "$server_pid"
code=$?
set -e
server_pid=
took=$(( ($(date +%s%N) - started) / 1000000 ))
[ "$code" = 0 ] || { echo "smoke: the server exited $code after SIGTERM" >&2; cat "$work/server.log" >&2; exit 1; }
echo "smoke: SIGTERM: exit code 0 after ${took} ms"
