package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func getHTTP(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAdminMetrics parses /metrics with Prometheus's own parser and checks
// the families a dashboard needs.
func TestAdminMetrics(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Admin = AdminConfig{Port: -1} })
	rdb := newClient(t, s)
	ctx := context.Background()
	rdb.Set(ctx, "a", "1", 0)
	rdb.Set(ctx, "b", "1", 0)
	rdb.Get(ctx, "a")
	rdb.LPush(ctx, "a", "x") // WRONGTYPE
	base := "http://" + s.AdminAddr()
	code, body := getHTTP(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	value := func(name string, labels ...string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no family %s", name)
		}
	next:
		for _, m := range f.Metric {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.Label {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return m.Counter.GetValue()
			case dto.MetricType_GAUGE:
				return m.Gauge.GetValue()
			case dto.MetricType_HISTOGRAM:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("%s %v not found", name, labels)
		return 0
	}
	if v := value("damselfly_commands_total", "cmd", "set"); v != 2 {
		t.Errorf("set calls %v", v)
	}
	if v := value("damselfly_commands_failed_calls_total", "cmd", "lpush"); v != 1 {
		t.Errorf("lpush failed %v", v)
	}
	if v := value("damselfly_command_latency_seconds", "cmd", "set"); v != 2 {
		t.Errorf("set histogram count %v", v)
	}
	h := fams["damselfly_command_latency_seconds"].Metric[0].Histogram
	if len(h.Bucket) < 20 || h.Bucket[len(h.Bucket)-1].GetCumulativeCount() != h.GetSampleCount() {
		t.Errorf("buckets %v", h.Bucket)
	}
	if v := value("damselfly_db_keys", "db", "db0"); v != 2 {
		t.Errorf("db0 keys %v", v)
	}
	if v := value("damselfly_errors_total", "err", "WRONGTYPE"); v != 1 {
		t.Errorf("errors %v", v)
	}
	if value("damselfly_connected_clients") < 1 || value("damselfly_memory_used_bytes") <= 0 {
		t.Error("clients or memory")
	}
	value("damselfly_expired_keys_total")
	value("damselfly_evicted_keys_total")
	value("damselfly_rdb_last_bgsave_duration_seconds")
	value("damselfly_aof_enabled")
	value("damselfly_master_repl_offset")
	value("damselfly_instance_info", "role", "master")
	if value("damselfly_net_input_bytes_total") <= 0 || value("damselfly_net_output_bytes_total") <= 0 { // netstats.go
		t.Error("network counters")
	}
	value("damselfly_instantaneous_ops_per_sec")
	if code, body := getHTTP(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz %d %q", code, body)
	}
	if code, _ := getHTTP(t, base+"/debug/pprof/"); code != 404 {
		t.Errorf("pprof without --admin-pprof: %d", code)
	}
}

func TestAdminPprofAndOff(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Admin = AdminConfig{Port: -1, Pprof: true} })
	if code, body := getHTTP(t, "http://"+s.AdminAddr()+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof: %d", code)
	}
	if off := startServer(t); off.AdminAddr() != "" {
		t.Error("admin port on by default")
	}
}

// TestInfoKeepsExporterFields: the INFO fields redis_exporter reads.
func TestInfoKeepsExporterFields(t *testing.T) {
	s := startServer(t)
	rdb := newClient(t, s)
	f := infoFields(t, rdb, "everything")
	for _, k := range []string{"uptime_in_seconds", "process_id", "connected_clients", "blocked_clients",
		"client_recent_max_output_buffer", "client_recent_max_input_buffer", "used_memory", "used_memory_rss",
		"used_memory_peak", "used_memory_dataset", "maxmemory", "mem_fragmentation_ratio", "loading",
		"rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time", "rdb_last_bgsave_status",
		"rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec", "aof_enabled", "aof_rewrite_in_progress",
		"aof_last_rewrite_time_sec", "aof_last_bgrewrite_status", "aof_last_write_status", "pubsub_channels",
		"pubsub_patterns", "latest_fork_usec", "connected_slaves", "master_repl_offset", "repl_backlog_size",
		"sync_full", "sync_partial_ok", "sync_partial_err", "total_connections_received", "total_commands_processed",
		"rejected_connections", "expired_keys", "evicted_keys", "keyspace_hits", "keyspace_misses", "used_cpu_sys",
		"used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children", "total_error_replies",
		"redis_version", "redis_mode", "os", "run_id", "tcp_port", "maxmemory_policy", "role", "redis_build_id"} {
		if _, ok := f[k]; !ok {
			t.Errorf("INFO lacks %s", k)
		}
	}
}
