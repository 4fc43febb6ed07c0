#!/usr/bin/env bash
# Runs a command with an S3-compatible server (versitygw) on 127.0.0.1:
# starts it on a free port with a temporary root, exports the endpoint and
# credentials the tests read, runs "$@", and stops the server whatever happens.
set -euo pipefail
VERSITYGW=${VERSITYGW:-versitygw}
root=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 17070)
export AWS_ACCESS_KEY_ID=corltest AWS_SECRET_ACCESS_KEY=corltestsecret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
"$VERSITYGW" --port "127.0.0.1:$port" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" posix "$root" >"$root.log" 2>&1 &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$root" "$root.log"; }
trap cleanup EXIT
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done
export CORL_TEST_S3_ENDPOINT="http://127.0.0.1:$port" CORL_REQUIRE_S3=1
echo "versitygw on $CORL_TEST_S3_ENDPOINT"
"$@"
