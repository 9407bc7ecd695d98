#!/usr/bin/env bash
# Container entrypoint: register from the environment when /data has no
# registration yet, then exec the daemon (so it receives SIGTERM directly).
#
#   FORGELOAD_INSTANCE                  forge URL (required to register)
#   FORGELOAD_REGISTRATION_TOKEN        registration token, or
#   FORGELOAD_REGISTRATION_TOKEN_FILE   a file holding it (e.g. a secret mount)
#   GITEA_RUNNER_REGISTRATION_TOKEN     read when FORGELOAD_REGISTRATION_TOKEN is not set
#   FORGELOAD_REGISTRATION_SECRET       Forgejo offline registration secret (instead of a token), or
#   FORGELOAD_REGISTRATION_SECRET_FILE  a file holding it
#   FORGELOAD_RUNNER_NAME               runner name (default: container host name)
#   FORGELOAD_RUNNER_LABELS             comma-separated labels (default: forgeload)
#   FORGELOAD_EPHEMERAL                 "true": take one job, then exit
#   FORGELOAD_ONCE                      "true": run one job, then exit
#   FORGELOAD_HANDLE                    a Forgejo 15 job handle: take only that job, then exit
#   FORGELOAD_CONFIG                    config file path (optional)
#   FORGELOAD_MAX_REG_ATTEMPTS          registration attempts (default 10, 5 s apart)
#   FORGELOAD_DATA_DIR                  the daemon's directory (default /data)
#
# The registration token is needed only to register: it is removed from the
# environment before the daemon starts, so that nothing the daemon runs can
# read it (run: steps could otherwise see it in /proc/<daemon pid>/environ).
set -euo pipefail
cd "${FORGELOAD_DATA_DIR:-/data}"

# The job handle is a daemon flag, not a config override: keep it out of
# the environment that register and the daemon see.
handle="${FORGELOAD_HANDLE:-}"
unset FORGELOAD_HANDLE

args=()
if [ -n "${FORGELOAD_CONFIG:-}" ]; then
  args+=(-c "$FORGELOAD_CONFIG")
fi
runner_file="${FORGELOAD_RUNNER_FILE:-.runner}"

if [ ! -s "$runner_file" ]; then
  if [ -z "${FORGELOAD_INSTANCE:-}" ]; then
    echo "forgeload: $runner_file is missing and FORGELOAD_INSTANCE is not set; set FORGELOAD_INSTANCE and FORGELOAD_REGISTRATION_TOKEN to register" >&2
    exit 2
  fi
  reg=(register --no-interactive --instance "$FORGELOAD_INSTANCE")
  if [ -n "${FORGELOAD_REGISTRATION_TOKEN_FILE:-}" ]; then
    reg+=(--token-file "$FORGELOAD_REGISTRATION_TOKEN_FILE")
  fi
  if [ -n "${FORGELOAD_REGISTRATION_SECRET_FILE:-}" ]; then
    reg+=(--secret-file "$FORGELOAD_REGISTRATION_SECRET_FILE")
  fi
  [ -n "${FORGELOAD_RUNNER_NAME:-}" ] && reg+=(--name "$FORGELOAD_RUNNER_NAME")
  [ -n "${FORGELOAD_RUNNER_LABELS:-}" ] && reg+=(--labels "$FORGELOAD_RUNNER_LABELS")
  [ "${FORGELOAD_EPHEMERAL:-}" = "true" ] && reg+=(--ephemeral)
  attempts="${FORGELOAD_MAX_REG_ATTEMPTS:-10}"
  for i in $(seq 1 "$attempts"); do
    if forgeload "${args[@]}" "${reg[@]}"; then
      break
    fi
    if [ "$i" -eq "$attempts" ]; then
      echo "forgeload: registration failed $attempts times; giving up" >&2
      exit 1
    fi
    echo "forgeload: registration attempt $i failed; retrying in 5 s" >&2
    sleep 5
  done
fi

unset FORGELOAD_REGISTRATION_TOKEN FORGELOAD_REGISTRATION_TOKEN_FILE GITEA_RUNNER_REGISTRATION_TOKEN \
  FORGELOAD_REGISTRATION_SECRET FORGELOAD_REGISTRATION_SECRET_FILE

daemon=(daemon)
[ "${FORGELOAD_ONCE:-}" = "true" ] && daemon+=(--once)
[ -n "$handle" ] && daemon+=(--handle "$handle")
exec forgeload "${args[@]}" "${daemon[@]}"
