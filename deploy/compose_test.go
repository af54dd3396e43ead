package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// composeExample runs the docker compose example of README.md (the YAML
// block after the marker comment) on the test image: a write to the primary
// reaches the replica, and the primary's volume keeps it across down/up.
func composeExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- compose example: checked by deploy/compose_test.go -->\\s*```yaml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no compose example after its marker comment")
	}
	yaml := string(m[1])
	// The test image instead of one built as the README says, and free
	// host ports instead of 6379/6380.
	yaml = strings.ReplaceAll(yaml, "image: damselfly", "image: "+imageName)
	yaml = regexp.MustCompile(`"(\d+):6379"`).ReplaceAllString(yaml, `"127.0.0.1::6379"`)
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	compose := composeCommand(t)
	project := randName("damselflytest")
	dc := func(args ...string) (string, error) {
		cmd := exec.Command(compose[0], append(append(compose[1:], "-p", project, "-f", file), args...)...)
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := dc(args...)
		if err != nil {
			t.Fatalf("compose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	t.Cleanup(func() { dc("down", "-v", "-t", "1") })
	pass := regexp.MustCompile(`DAMSELFLY_REQUIREPASS:\s*"?([^"\s]+)`).FindStringSubmatch(yaml)
	if pass == nil {
		t.Fatal("the compose example sets no DAMSELFLY_REQUIREPASS")
	}
	start := time.Now()
	must("up", "-d")
	t.Logf("compose up (the replica waits for the primary's health check): %v", time.Since(start).Round(100*time.Millisecond))
	client := func(service string) *redis.Client {
		addr := lastLine(must("port", service, "6379"))
		rdb := redis.NewClient(&redis.Options{Addr: addr, Password: pass[1], MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		for deadline := time.Now().Add(60 * time.Second); rdb.Ping(context.Background()).Err() != nil; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				logs, _ := dc("logs")
				t.Fatalf("%s does not answer at %s\n%s", service, addr, logs)
			}
		}
		return rdb
	}
	ctx := context.Background()
	primary, replica := client("primary"), client("replica")
	if err := primary.Set(ctx, "k", "replicated", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); replica.Get(ctx, "k").Val() != "replicated"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			logs, _ := dc("logs")
			t.Fatalf("the write did not reach the replica: %s\n%s", replica.Info(ctx, "replication").Val(), logs)
		}
	}
	if err := replica.Set(ctx, "x", "y", 0).Err(); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("write to the replica: %v, want READONLY", err)
	}
	// The primary's volume keeps the data across down (without -v) and up.
	must("down", "-t", "10")
	must("up", "-d", "primary")
	if got := client("primary").Get(ctx, "k").Val(); got != "replicated" {
		t.Fatalf("after compose down/up: GET = %q", got)
	}
}

// composeCommand is "docker compose" (v2) or Debian's docker-compose (v1).
func composeCommand(t *testing.T) []string {
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	t.Skip("no docker compose (apt-get install -y docker-compose): skipping the README's compose example")
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
