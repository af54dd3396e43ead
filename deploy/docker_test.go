package deploy

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	goStandIn      = "damselfly-test/go"
	runtimeStandIn = "damselfly-test/runtime:nonroot"
	imageName      = "damselfly-test/damselfly:latest"
)

// docker runs the docker CLI and returns its trimmed output.
func docker(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustDocker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := docker(t, args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// requireDocker skips the test when no Docker engine is reachable.
func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the Docker image test")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI (apt-get install -y docker.io, then start dockerd): skipping the Docker image test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine reachable (start dockerd; see .ci/run): skipping the Docker image test: %v %s", err, bytes.TrimSpace(out))
	}
}

func randName(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// tarContext writes a build context: files maps a path in the context to
// a path on this machine (a directory is added recursively), extra holds
// files given by content.
func tarContext(t *testing.T, files map[string]string, extra map[string]string) io.Reader {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := func() error {
			for name, body := range extra {
				hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0)}
				if strings.HasSuffix(name, "/") {
					hdr = &tar.Header{Name: name, Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0)}
				}
				if err := tw.WriteHeader(hdr); err != nil {
					return err
				}
				if _, err := io.WriteString(tw, body); err != nil {
					return err
				}
			}
			for dst, src := range files {
				err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
					if err != nil {
						return err
					}
					fi, err := os.Lstat(p)
					if err != nil {
						return err
					}
					rel, _ := filepath.Rel(src, p)
					link := ""
					if fi.Mode()&os.ModeSymlink != 0 {
						if link, err = os.Readlink(p); err != nil {
							return err
						}
					}
					hdr, err := tar.FileInfoHeader(fi, link)
					if err != nil {
						return err
					}
					hdr.Name = filepath.ToSlash(filepath.Join(dst, rel))
					hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
					if err := tw.WriteHeader(hdr); err != nil {
						return err
					}
					if fi.Mode().IsRegular() {
						f, err := os.Open(p)
						if err != nil {
							return err
						}
						_, err = io.Copy(tw, f)
						f.Close()
						return err
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			return tw.Close()
		}()
		pw.CloseWithError(err)
	}()
	return pr
}

// buildFrom builds tag from a tar context unless it exists already.
func buildFrom(t *testing.T, tag string, ctx io.Reader) {
	t.Helper()
	if _, err := docker(t, "image", "inspect", tag); err == nil {
		return
	}
	cmd := exec.Command("docker", "build", "-t", tag, "-")
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	cmd.Stdin = ctx
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", tag, err, out)
	}
}

// standIns builds the local stand-ins of golang:1.26 and distroless
// static:nonroot, once per Go version (they are kept as a cache).
func standIns(t *testing.T) (goImage string) {
	t.Helper()
	goroot := strings.TrimSpace(goEnv(t, "GOROOT"))
	version := strings.TrimPrefix(strings.TrimSpace(goEnv(t, "GOVERSION")), "go")
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("no busybox (apt-get install -y busybox-static): cannot build the stand-in Go image")
	}
	if out, _ := exec.Command("file", "-L", busybox).Output(); len(out) > 0 && !bytes.Contains(out, []byte("statically linked")) {
		t.Skipf("%s is not statically linked (apt-get install -y busybox-static)", busybox)
	}
	busybox, _ = filepath.EvalSymlinks(busybox)
	goImage = goStandIn + ":" + version
	buildFrom(t, goImage, tarContext(t, map[string]string{
		"go":           goroot,
		"busybox":      busybox,
		"ca-certs.crt": "/etc/ssl/certs/ca-certificates.crt",
	}, map[string]string{"Dockerfile": `FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "mkdir", "-p", "/usr/bin", "/sbin", "/usr/sbin", "/tmp", "/root", "/go"]
RUN ["/bin/busybox", "--install", "-s"]
COPY go /usr/local/go
COPY ca-certs.crt /etc/ssl/certs/ca-certificates.crt
ENV PATH=/go/bin:/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin GOPATH=/go HOME=/root GOTOOLCHAIN=local
RUN chmod 1777 /tmp && go version
WORKDIR /go
`}))
	buildFrom(t, runtimeStandIn, tarContext(t, nil, map[string]string{
		"Dockerfile": `FROM scratch
COPY etc /etc
COPY home /home
COPY tmp /tmp
USER 65532:65532
WORKDIR /home/nonroot
`,
		"etc/":          "",
		"etc/passwd":    "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"etc/group":     "root:x:0:\nnonroot:x:65532:\n",
		"home/":         "",
		"home/nonroot/": "",
		"tmp/":          "",
	}))
	return goImage
}

func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return string(out)
}

// buildImage builds the repository's Dockerfile on the stand-ins, with the
// module proxy settings of this machine (the build stage downloads modules
// as a user's build does).
func buildImage(t *testing.T) {
	t.Helper()
	goImage := standIns(t)
	start := time.Now()
	args := []string{"build", "-t", imageName,
		"--build-arg", "GO_IMAGE=" + goImage, "--build-arg", "RUNTIME_IMAGE=" + runtimeStandIn}
	for _, v := range []string{"GOPROXY", "GOSUMDB"} {
		if val := strings.TrimSpace(goEnv(t, v)); val != "" {
			args = append(args, "--build-arg", v+"="+val)
		}
	}
	mustDocker(t, append(args, "..")...)
	t.Logf("docker build: %v", time.Since(start).Round(time.Second))
}

// container is a running container of the image.
type container struct {
	t    *testing.T
	id   string
	addr string // published 6379
}

// run starts a detached container; docker run arguments come before the
// image, server arguments after it.
func run(t *testing.T, dockerArgs []string, serverArgs ...string) *container {
	t.Helper()
	name := randName("damselfly-test-")
	args := append([]string{"run", "-d", "--name", name, "-p", "127.0.0.1::6379"}, dockerArgs...)
	args = append(append(args, imageName), serverArgs...)
	id := mustDocker(t, args...)
	t.Cleanup(func() { docker(t, "rm", "-f", "-v", id) })
	return &container{t: t, id: id}
}

func (c *container) inspect(format string) string {
	out, _ := docker(c.t, "inspect", "-f", format, c.id)
	return out
}

// published is the host address of a published container port.
func (c *container) published(port string) string {
	c.t.Helper()
	out := mustDocker(c.t, "port", c.id, port)
	return strings.Split(out, "\n")[0]
}

// client waits until the server answers PING through the published port.
func (c *container) client(pass string) *redis.Client {
	c.t.Helper()
	if c.addr == "" {
		c.addr = c.published("6379/tcp")
	}
	// Long read timeout: DEBUG POPULATE and SAVE of millions of keys.
	rdb := redis.NewClient(&redis.Options{Addr: c.addr, Password: pass, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Minute})
	c.t.Cleanup(func() { rdb.Close() })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := rdb.Ping(context.Background()).Err()
		if err == nil {
			return rdb
		}
		if time.Now().After(deadline) || c.inspect("{{.State.Running}}") == "false" {
			logs, _ := docker(c.t, "logs", c.id)
			c.t.Fatalf("container %s does not answer: %v\n%s", c.id[:12], err, logs)
		}
	}
}

// stop runs docker stop with its default timeout and returns how long it
// took; the container must have exited by itself (code 0, not SIGKILL).
func (c *container) stop() time.Duration {
	c.t.Helper()
	start := time.Now()
	mustDocker(c.t, "stop", c.id)
	d := time.Since(start)
	if code := c.inspect("{{.State.ExitCode}}"); code != "0" {
		logs, _ := docker(c.t, "logs", c.id)
		c.t.Fatalf("docker stop: exit code %s after %v (137: killed at the timeout)\n%s", code, d, logs)
	}
	return d
}

// waitHealth waits for the health status want, failing on unhealthy.
func (c *container) waitHealth(want string, within time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	for {
		st := c.inspect("{{.State.Health.Status}}")
		if st == want {
			return time.Since(start)
		}
		if st == "unhealthy" || time.Since(start) > within {
			c.t.Fatalf("health %q after %v, want %q: %s", st, time.Since(start), want, c.inspect("{{json .State.Health}}"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func volume(t *testing.T) string {
	name := randName("damselfly-test-vol-")
	mustDocker(t, "volume", "create", name)
	t.Cleanup(func() { docker(t, "volume", "rm", "-f", name) })
	return name
}

func info(t *testing.T, rdb *redis.Client, field string) string {
	for _, l := range strings.Split(rdb.Info(context.Background(), "persistence").Val(), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

func TestDockerImage(t *testing.T) {
	requireDocker(t)
	buildImage(t)
	ctx := context.Background()

	t.Run("size", func(t *testing.T) {
		size := mustDocker(t, "image", "inspect", "-f", "{{.Size}}", imageName)
		var n int64
		fmt.Sscan(size, &n)
		t.Logf("image size: %.1f MB", float64(n)/1e6)
		if n > 25e6 {
			t.Errorf("image is %.1f MB, want under 25 MB", float64(n)/1e6)
		}
	})

	t.Run("named volume, docker stop, non-root, healthy", func(t *testing.T) {
		vol := volume(t)
		c := run(t, []string{"-v", vol + ":/data"})
		rdb := c.client("")
		rdb.Set(ctx, "greeting", "hello", 0)
		rdb.HSet(ctx, "h", "f", "v")
		c.stop()
		c2 := run(t, []string{"-v", vol + ":/data"})
		rdb2 := c2.client("")
		if got := rdb2.Get(ctx, "greeting").Val(); got != "hello" {
			t.Fatalf("after docker stop and a new container: GET = %q", got)
		}
		if got := rdb2.HGet(ctx, "h", "f").Val(); got != "v" {
			t.Fatalf("HGET = %q", got)
		}
		pid := c2.inspect("{{.State.Pid}}")
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			t.Fatal(err)
		}
		uid := regexp.MustCompile(`(?m)^Uid:\s+(.*)$`).FindSubmatch(status)
		if uid == nil || strings.Join(strings.Fields(string(uid[1])), " ") != "65532 65532 65532 65532" {
			t.Fatalf("the server runs as uids %q, want 65532", uid)
		}
		// The image's own health check (10 s interval).
		d := c2.waitHealth("healthy", 60*time.Second)
		t.Logf("healthy %v after the PING answered (image default interval 10s)", d.Round(100*time.Millisecond))
	})

	t.Run("docker kill after a periodic save", func(t *testing.T) {
		vol := volume(t)
		c := run(t, []string{"-v", vol + ":/data"}, "--save", "1 1")
		rdb := c.client("")
		rdb.Set(ctx, "k", "saved by the schedule", 0)
		for deadline := time.Now().Add(20 * time.Second); info(t, rdb, "rdb_changes_since_last_save") != "0" ||
			info(t, rdb, "rdb_bgsave_in_progress") != "0"; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the periodic save did not run")
			}
		}
		mustDocker(t, "kill", c.id)
		c2 := run(t, []string{"-v", vol + ":/data"})
		if got := c2.client("").Get(ctx, "k").Val(); got != "saved by the schedule" {
			t.Fatalf("after docker kill: GET = %q", got)
		}
	})

	t.Run("arguments keep the ENV defaults; memcached off", func(t *testing.T) {
		c := run(t, []string{"-p", "127.0.0.1::11211", "--health-interval", "1s"}, "--requirepass", "x")
		rdb := c.client("x") // reached through docker's proxy: bound to 0.0.0.0
		for param, want := range map[string]string{"dir": "/data", "save": "3600 1 300 100 60 10000", "requirepass": "x"} {
			if got := rdb.ConfigGet(ctx, param).Val()[param]; got != want {
				t.Errorf("CONFIG GET %s = %q, want %q", param, got, want)
			}
		}
		nc, err := net.DialTimeout("tcp", c.published("11211/tcp"), 2*time.Second)
		if err == nil {
			nc.SetDeadline(time.Now().Add(2 * time.Second))
			io.WriteString(nc, "version\r\n")
			line, _ := bufio.NewReader(nc).ReadString('\n')
			nc.Close()
			if strings.HasPrefix(line, "VERSION") {
				t.Errorf("the memcached port answers without --memcached_port: %q", line)
			}
		}
		// The password is an argument the health check does not see: the
		// server's NOAUTH still counts as alive.
		c.waitHealth("healthy", 30*time.Second)
	})

	t.Run("bind-mounted host directory", func(t *testing.T) {
		dir := t.TempDir()
		if os.Getuid() == 0 {
			os.Chown(dir, 65532, 65532)
		} else {
			os.Chmod(dir, 0o777)
		}
		c := run(t, []string{"-v", dir + ":/data"})
		c.client("").Set(ctx, "k", "on the host", 0)
		c.stop()
		if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err != nil {
			t.Fatalf("no dump in the bind-mounted directory: %v", err)
		}
		c2 := run(t, []string{"-v", dir + ":/data"})
		if got := c2.client("").Get(ctx, "k").Val(); got != "on the host" {
			t.Fatalf("GET = %q", got)
		}

		ro := t.TempDir() // owned by this user, mode 0700: not writable by 65532
		os.Chmod(ro, 0o755)
		bad := run(t, []string{"-v", ro + ":/data"})
		out, _ := docker(t, "wait", bad.id)
		logs, _ := docker(t, "logs", bad.id)
		if out != "1" || !strings.Contains(logs, "is not writable") || !strings.Contains(logs, "chown 65532") {
			t.Fatalf("unwritable bind mount: exit %s, logs:\n%s", out, logs)
		}
	})

	t.Run("docker stop saves 1M keys; restart", func(t *testing.T) {
		vol := volume(t)
		c := run(t, []string{"-v", vol + ":/data", "-e", "DAMSELFLY_ENABLE_DEBUG_COMMAND=yes"})
		rdb := c.client("")
		if err := rdb.Do(ctx, "DEBUG", "POPULATE", 1_000_000).Err(); err != nil {
			t.Fatal(err)
		}
		d := c.stop()
		t.Logf("docker stop with 1M keys (save on SIGTERM): %v", d.Round(10*time.Millisecond))
		start := time.Now()
		c2 := run(t, []string{"-v", vol + ":/data", "--health-interval", "1s"})
		rdb2 := c2.client("")
		if n := rdb2.DBSize(ctx).Val(); n != 1_000_000 {
			t.Fatalf("DBSIZE after restart = %d", n)
		}
		ready := time.Since(start)
		c2.waitHealth("healthy", 30*time.Second)
		t.Logf("restart with 1M keys: answering after %v, healthy after %v (health interval 1s)",
			ready.Round(10*time.Millisecond), time.Since(start).Round(10*time.Millisecond))
	})

	t.Run("long load stays starting or healthy", func(t *testing.T) {
		const keys = 5_000_000
		vol := volume(t)
		c := run(t, []string{"-v", vol + ":/data", "-e", "DAMSELFLY_ENABLE_DEBUG_COMMAND=yes"}, "--save", "")
		rdb := c.client("")
		if err := rdb.Do(ctx, "DEBUG", "POPULATE", keys).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		c.stop()
		start := time.Now()
		c2 := run(t, []string{"-v", vol + ":/data", "--health-interval", "1s"}, "--save", "")
		addr := c2.published("6379/tcp")
		var sawLoading bool
		var statuses []string
		for {
			st := c2.inspect("{{.State.Health.Status}}")
			if len(statuses) == 0 || statuses[len(statuses)-1] != st {
				statuses = append(statuses, st)
			}
			if st == "unhealthy" {
				t.Fatalf("unhealthy %v into a %d-key load: %s", time.Since(start), keys, c2.inspect("{{json .State.Health}}"))
			}
			line := ping(addr)
			if strings.HasPrefix(line, "-LOADING") {
				sawLoading = true
			}
			if line == "+PONG" {
				break
			}
			if time.Since(start) > 120*time.Second {
				t.Fatalf("not loaded after %v (last reply %q)", time.Since(start), line)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%d keys loaded in %v; health went %v", keys, time.Since(start).Round(100*time.Millisecond), statuses)
		if n := c2.client("").DBSize(ctx).Val(); n != keys {
			t.Fatalf("DBSIZE = %d", n)
		}
		if !sawLoading {
			t.Skip("the server does not listen while loading yet (the snapshot issue's -LOADING): " +
				"checked only that the health never turned unhealthy")
		}
	})

	t.Run("io_uring refused by seccomp: served on epoll", func(t *testing.T) {
		ioURingRefused(t)
	})

	t.Run("compose example in the README", func(t *testing.T) {
		composeExample(t)
	})
}

// ioURingRefused runs the image under a seccomp profile that refuses the
// io_uring system calls with EPERM, as Docker 25 and later's default
// profile does (moby/moby#46762; this machine's engine may be older): the
// default --event-loop auto must fall back to epoll, say why in the log,
// and serve clients over TCP and the Unix socket.
func ioURingRefused(t *testing.T) {
	ctx := context.Background()
	profile := filepath.Join(t.TempDir(), "no-io_uring.json")
	os.WriteFile(profile, []byte(`{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names":
		["io_uring_setup", "io_uring_enter", "io_uring_register"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}`), 0o644)
	sockDir := t.TempDir()
	os.Chmod(sockDir, 0o1777)
	c := run(t, []string{"--security-opt", "seccomp=" + profile, "-v", sockDir + ":/run/sock"},
		"--unixsocket", "/run/sock/damselfly.sock", "--unixsocketperm", "777")
	rdb := c.client("")
	server := rdb.Info(ctx, "server").Val()
	if !strings.Contains(server, "multiplexing_api:epoll\r\n") {
		t.Fatalf("INFO server under a profile refusing io_uring, want multiplexing_api:epoll:\n%s", server)
	}
	logs, _ := docker(t, "logs", c.id)
	if !strings.Contains(logs, "io_uring unavailable") || !strings.Contains(logs, "seccomp") {
		t.Errorf("the log does not say why the loops use epoll:\n%s", logs)
	}
	unix := redis.NewClient(&redis.Options{Network: "unix", Addr: filepath.Join(sockDir, "damselfly.sock"), MaxRetries: -1})
	defer unix.Close()
	if err := unix.Set(ctx, "k", "over the socket", 0).Err(); err != nil {
		t.Fatalf("SET over the Unix socket: %v", err)
	}
	if got := rdb.Get(ctx, "k").Val(); got != "over the socket" {
		t.Fatalf("GET over TCP = %q", got)
	}
}

// ping sends PING on a fresh connection and returns the reply line (or
// the error).
func ping(addr string) string {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err.Error()
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	io.WriteString(nc, "*1\r\n$4\r\nPING\r\n")
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(line)
}
