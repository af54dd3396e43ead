# syntax=docker/dockerfile:1
# Multi-stage build: a static Go binary on a distroless base, run as non-root.
# The base images are build arguments so that other registries or local
# stand-ins can be used (--build-arg GO_IMAGE=... --build-arg RUNTIME_IMAGE=...);
# the runtime image must have the user nonroot (uid 65532).
ARG GO_IMAGE=golang:1.26
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
# The module proxy settings of the builder's environment, when passed
# (--build-arg GOPROXY="$(go env GOPROXY)"); empty ones keep Go's defaults.
ARG GOPROXY
ARG GOSUMDB
ARG GOFLAGS
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/damselfly ./cmd/damselfly
# distroless has no shell to chown with: prepare /data here, owned by the
# nonroot user (65532), so dumps can be written to a fresh named volume.
RUN mkdir -p /out/data

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/damselfly /damselfly
COPY --from=build --chown=65532:65532 /out/data /data
# Dumps live in /data; mount a volume there to keep them across containers
# (a bind-mounted host directory must be writable by uid 65532).
VOLUME /data
WORKDIR /data
USER nonroot:nonroot
# The defaults are environment variables, not CMD, so that
# `docker run IMAGE --requirepass x` keeps them. Saves follow Redis's
# schedule; SIGTERM (docker stop) saves too, so give large datasets a longer
# stop timeout (docker stop -t, docker run --stop-timeout; see the README).
# Protected mode is off because the container's network is the boundary: set
# --requirepass (or DAMSELFLY_REQUIREPASS) before publishing the port. The
# memcached protocol is off unless asked for (--memcached_port 11211).
ENV DAMSELFLY_DIR=/data \
    DAMSELFLY_BIND=0.0.0.0 \
    DAMSELFLY_PROTECTED_MODE=false \
    DAMSELFLY_SAVE="3600 1 300 100 60 10000"
EXPOSE 6379
# The server answers PING on its own port; exit 0 when it answers (PONG, or
# NOAUTH / LOADING: up, but password-protected or still loading its dump).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/damselfly", "--healthcheck"]
ENTRYPOINT ["/damselfly"]
