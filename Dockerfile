# syntax=docker/dockerfile:1
# Multi-stage build: a static Go binary on a distroless base, run as non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/damselfly ./cmd/damselfly
# distroless has no shell to chown with: prepare /data here, owned by the
# nonroot user (65532), so dumps can be written to a fresh named volume.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/damselfly /damselfly
COPY --from=build --chown=65532:65532 /out/data /data
# Dumps live in /data; mount a volume there to keep them across containers
# (a bind-mounted host directory must be writable by uid 65532).
VOLUME /data
WORKDIR /data
USER nonroot:nonroot
EXPOSE 6379 11211
# The server answers PING on its own port; exit 0 on PONG.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/damselfly", "--healthcheck"]
ENTRYPOINT ["/damselfly"]
# Save periodically by default (Redis's schedule); SIGTERM (docker stop) saves
# too, so give large datasets a longer stop timeout (docker stop -t).
# Protected mode is off because the container's network is the boundary: set
# --requirepass (or DAMSELFLY_REQUIREPASS) before publishing the port.
CMD ["--dir", "/data", "--bind", "0.0.0.0", "--no-protected-mode", "--save", "3600 1 300 100 60 10000", "--memcached_port", "11211"]
