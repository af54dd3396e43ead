// Package deploy holds no code: its tests build and exercise Damselfly's
// deployment artefacts as users run them, the Dockerfile at the repository
// root and the docker compose example in README.md.
//
// The tests need a Docker engine (Debian: docker.io, with dockerd running)
// and skip with a message saying so when none is reachable. Nothing is
// pulled from a registry: the Dockerfile's base images are build arguments,
// and the tests build local stand-ins for them (a Go image from this
// machine's Go toolchain and Debian's busybox-static, and a runtime image
// with the distroless nonroot user, uid 65532). Images, containers and
// volumes they create are named damselfly-test*; containers and volumes are
// removed when the test ends, images are kept as the build cache.
package deploy
