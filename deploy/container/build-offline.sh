#!/bin/sh
# Builds the offline image (deploy/container/Dockerfile.offline) with the
# local Docker Engine and no registry: the binary is built on this host,
# and the image starts FROM scratch.
#
#   IMAGE          the tag to build (default forgeload:offline)
#   FORGELOAD_BIN  a static forgeload binary to use instead of building one
#   BUSYBOX        a static busybox (default: busybox-static's /bin/busybox)
#   CA_CERTS       the CA bundle to copy (default /etc/ssl/certs/ca-certificates.crt)
#   VERSION        the version stamped into a binary built here (default dev)
set -eu
cd "$(dirname "$0")/../.."
image="${IMAGE:-forgeload:offline}"
busybox="${BUSYBOX:-/bin/busybox}"
certs="${CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/bin" "$root/etc/ssl/certs" "$root/tmp" "$ctx/data"
chmod 1777 "$root/tmp"

if [ -n "${FORGELOAD_BIN:-}" ]; then
  cp "$FORGELOAD_BIN" "$root/usr/local/bin/forgeload"
else
  v=github.com/forgeload/forgeload/internal/pkg/ver
  CGO_ENABLED=0 go build -tags grpcnotrace -trimpath \
    -ldflags "-s -w -X $v.version=${VERSION:-dev}" \
    -o "$root/usr/local/bin/forgeload" ./cmd/forgeload
fi
# A binary that needs a dynamic loader would not start FROM scratch.
if ldd "$root/usr/local/bin/forgeload" >/dev/null 2>&1; then
  echo "build-offline: the forgeload binary is dynamically linked; build it with CGO_ENABLED=0" >&2
  exit 2
fi
if ! [ -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
  echo "build-offline: $busybox is not a static busybox; install busybox-static (apt-get install busybox-static) or set BUSYBOX" >&2
  exit 2
fi
cp "$busybox" "$root/bin/busybox"
for tool in sh ls cat env mkdir rm cp mv echo grep sed wc sleep test true false id; do
  ln -s busybox "$root/bin/$tool"
done
cp "$certs" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/bin/sh\nforgeload:x:1000:1000:forgeload:/data:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nforgeload:x:1000:\n' >"$root/etc/group"
cp deploy/container/Dockerfile.offline "$ctx/Dockerfile"
docker build ${DOCKER_BUILD_ARGS:-} -t "$image" "$ctx"
echo "built $image"
