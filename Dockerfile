# The delayq server. Started with no --redis URL it runs its own redis-server (installed here)
# with its append-only file under /var/lib/delayq/data: mount a volume there to keep the jobs.
#
#   docker build -t delayq .
#   docker run --rm -p 7070:7070 -v delayq-data:/var/lib/delayq/data delayq
#   docker run --rm -p 7070:7070 -e DELAYQ_REDIS=redis://redis:6379/0 delayq
#
# Every flag of `delayq server` also reads a DELAYQ_* variable (docker run -e ...); see
# `docker run --rm delayq server --help`.

ARG GO_VERSION=1.26
ARG DEBIAN_RELEASE=bookworm

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS build
WORKDIR /src
# Modules first, so that a change of the sources does not download them again: the workspace
# (go.work) of the library, middleware and the command's module.
COPY go.work go.work.sum go.mod go.sum ./
COPY middleware/go.mod middleware/go.sum ./middleware/
COPY cmd/delayq/go.mod cmd/delayq/go.sum ./cmd/delayq/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/delayq ./cmd/delayq

FROM debian:${DEBIAN_RELEASE}-slim
# redis-server for the embedded default; ca-certificates for rediss:// and https callbacks.
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server ca-certificates \
	&& rm -rf /var/lib/apt/lists/*
# An unprivileged user of its own, owning the data directory (a new named volume copies the
# ownership).
RUN useradd --system --user-group --uid 10001 --home-dir /var/lib/delayq --shell /usr/sbin/nologin delayq \
	&& mkdir -p /var/lib/delayq/data \
	&& chown -R delayq:delayq /var/lib/delayq
COPY --from=build /out/delayq /usr/local/bin/delayq
USER delayq:delayq
WORKDIR /var/lib/delayq
# Inside a container the server must listen on every interface to be reachable through -p.
# Anyone who reaches the port may use the API: set DELAYQ_AUTH_TOKENS beyond a private network.
ENV DELAYQ_LISTEN=0.0.0.0:7070 \
	DELAYQ_DATA_DIR=/var/lib/delayq/data
EXPOSE 7070
VOLUME ["/var/lib/delayq/data"]
# delayq is process 1: it handles SIGTERM (docker stop) with a graceful shutdown and exits 0,
# and it reaps its own redis-server child. The shutdown waits up to --shutdown-timeout (30 s)
# for requests and webhook deliveries in flight: give docker stop as long (docker stop -t 40).
STOPSIGNAL SIGTERM
ENTRYPOINT ["delayq"]
CMD ["server"]
