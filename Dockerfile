# syntax=docker/dockerfile:1
# Build: docker build -t forgeload .
# Run:   docker run -e FORGELOAD_INSTANCE=https://gitea.example.com \
#          -e FORGELOAD_REGISTRATION_TOKEN=... -v forgeload-data:/data forgeload
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
ARG DATE=
RUN V=github.com/forgeload/forgeload/internal/pkg/ver && CGO_ENABLED=0 go build -tags grpcnotrace -trimpath \
      -ldflags "-s -w -X $V.version=${VERSION} -X $V.commit=${COMMIT} -X $V.date=${DATE}" \
      -o /out/forgeload ./cmd/forgeload

FROM debian:bookworm-slim
# bash runs run: steps, git runs actions/checkout, tini reaps step processes
# and forwards SIGTERM so running jobs drain.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash git ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 1000 --home-dir /data --shell /usr/sbin/nologin forgeload \
 && mkdir -p /data && chown forgeload:forgeload /data
COPY --from=build /out/forgeload /usr/local/bin/forgeload
COPY deploy/container/entrypoint.sh /usr/local/bin/forgeload-entrypoint
USER forgeload
WORKDIR /data
VOLUME ["/data"]
# Metrics, when enabled with FORGELOAD_METRICS_ENABLED=true and
# FORGELOAD_METRICS_ADDR=:9101.
EXPOSE 9101
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/forgeload-entrypoint"]
