package server

// The HTTP admin port (--admin-port, off by default; --admin-bind, default
// 127.0.0.1): /metrics in Prometheus's text format, /healthz, and Go's
// pprof under /debug/pprof/ only with --admin-pprof.
//
// /metrics is built from the same figures INFO shows (the INFO text is
// rendered and read back, so the two never disagree) plus each command's
// latency histogram (cmdstats.go). A scrape takes the locks INFO takes and
// nothing on the command path.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AdminConfig is the HTTP admin listener.
type AdminConfig struct {
	Port  int    // 0: off; -1: a free port (tests)
	Bind  string // default 127.0.0.1
	Pprof bool   // serve /debug/pprof/
}

type adminState struct {
	srv  *http.Server
	addr string
}

// startAdmin listens on the admin port (Start, when configured).
func (s *Server) startAdmin(cfg AdminConfig) error {
	if cfg.Port == 0 {
		return nil
	}
	bind := cfg.Bind
	if bind == "" {
		bind = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(max(cfg.Port, 0))))
	if err != nil {
		return fmt.Errorf("admin port: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", s.serveMetrics)
	mux.HandleFunc("/healthz", s.serveHealthz)
	if cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.admin.srv, s.admin.addr = hs, ln.Addr().String()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("admin port", "err", err)
		}
	}()
	s.log.Info("admin port listening", "addr", s.admin.addr, "pprof", cfg.Pprof)
	return nil
}

// AdminAddr is the admin listener's address ("" when off).
func (s *Server) AdminAddr() string { return s.admin.addr }

// closeAdmin stops the admin listener (Close).
func (s *Server) closeAdmin() {
	if s.admin.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.admin.srv.Shutdown(ctx)
	}
}

// serveHealthz answers 200 "ok" while serving, 503 while the dataset loads
// or the server shuts down.
func (s *Server) serveHealthz(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.persist.shutting.Load():
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	case s.persist.loading.Load():
		http.Error(w, "loading", http.StatusServiceUnavailable)
	default:
		io.WriteString(w, "ok\n")
	}
}

// latencyBuckets are the Prometheus histogram bounds of command latency,
// in nanoseconds: 1 µs doubling to about 1 s.
var latencyBuckets = func() []int64 {
	var b []int64
	for v := int64(1000); v <= 1_100_000_000; v *= 2 {
		b = append(b, v)
	}
	return b
}()

// metricsWriter writes the Prometheus text format, one HELP/TYPE header
// per family.
type metricsWriter struct {
	b    strings.Builder
	seen map[string]bool
}

func (m *metricsWriter) family(name, typ, help string) {
	if m.seen[name] {
		return
	}
	m.seen[name] = true
	fmt.Fprintf(&m.b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (m *metricsWriter) sample(name string, labels []string, v float64) {
	m.b.WriteString(name)
	if len(labels) > 0 {
		m.b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				m.b.WriteByte(',')
			}
			m.b.WriteString(labels[i])
			m.b.WriteString(`="`)
			m.b.WriteString(escapeLabel(labels[i+1]))
			m.b.WriteByte('"')
		}
		m.b.WriteByte('}')
	}
	m.b.WriteByte(' ')
	m.b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	m.b.WriteByte('\n')
}

func (m *metricsWriter) one(name, typ, help string, v float64, labels ...string) {
	m.family(name, typ, help)
	m.sample(name, labels, v)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// infoMap renders INFO everything and returns its fields.
func (s *Server) infoMap() map[string]string {
	txt := s.infoText(nil, map[string]bool{"everything": true})
	out := map[string]string{}
	for _, line := range strings.Split(txt, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

// subFields parses "a=1,b=2" (INFO's db and replica lines).
func subFields(v string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if k, x, ok := strings.Cut(kv, "="); ok {
			out[k] = x
		}
	}
	return out
}

func num(v string) (float64, bool) {
	switch v {
	case "ok", "up":
		return 1, true
	case "err", "down":
		return 0, true
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// infoGauges and infoCounters are the INFO fields /metrics exports, by
// their metric names (without the damselfly_ prefix).
var infoGauges = [][2]string{
	{"uptime_in_seconds", "uptime_seconds"},
	{"connected_clients", "connected_clients"},
	{"blocked_clients", "blocked_clients"},
	{"maxclients", "max_clients"},
	{"used_memory", "memory_used_bytes"},
	{"used_memory_rss", "memory_used_rss_bytes"},
	{"used_memory_peak", "memory_used_peak_bytes"},
	{"used_memory_dataset", "memory_used_dataset_bytes"},
	{"maxmemory", "memory_max_bytes"},
	{"loading", "loading_dump_file"},
	{"rdb_changes_since_last_save", "rdb_changes_since_last_save"},
	{"rdb_bgsave_in_progress", "rdb_bgsave_in_progress"},
	{"rdb_last_save_time", "rdb_last_save_timestamp_seconds"},
	{"rdb_last_bgsave_status", "rdb_last_bgsave_status"},
	{"rdb_last_bgsave_time_sec", "rdb_last_bgsave_duration_seconds"},
	{"rdb_current_bgsave_time_sec", "rdb_current_bgsave_duration_seconds"},
	{"aof_enabled", "aof_enabled"},
	{"aof_rewrite_in_progress", "aof_rewrite_in_progress"},
	{"aof_last_rewrite_time_sec", "aof_last_rewrite_duration_seconds"},
	{"aof_current_rewrite_time_sec", "aof_current_rewrite_duration_seconds"},
	{"aof_last_bgrewrite_status", "aof_last_bgrewrite_status"},
	{"aof_last_write_status", "aof_last_write_status"},
	{"aof_current_size", "aof_current_size_bytes"},
	{"aof_base_size", "aof_base_size_bytes"},
	{"pubsub_channels", "pubsub_channels"},
	{"pubsub_patterns", "pubsub_patterns"},
	{"connected_slaves", "connected_replicas"},
	{"master_repl_offset", "master_repl_offset"},
	{"slave_repl_offset", "replica_repl_offset"},
	{"master_last_io_seconds_ago", "master_last_io_seconds_ago"},
	{"master_link_status", "master_link_up"},
	{"master_sync_in_progress", "master_sync_in_progress"},
	{"repl_backlog_size", "replication_backlog_bytes"},
	{"repl_backlog_histlen", "replication_backlog_history_bytes"},
	{"number_of_cached_scripts", "cached_scripts"},
	// netstats.go
	{"instantaneous_ops_per_sec", "instantaneous_ops_per_sec"},
	{"instantaneous_input_kbps", "instantaneous_input_kbps"},
	{"instantaneous_output_kbps", "instantaneous_output_kbps"},
}

var infoCounters = [][2]string{
	{"total_connections_received", "connections_received_total"},
	{"total_commands_processed", "commands_processed_total"},
	{"rejected_connections", "rejected_connections_total"},
	{"expired_keys", "expired_keys_total"},
	{"evicted_keys", "evicted_keys_total"},
	{"keyspace_hits", "keyspace_hits_total"},
	{"keyspace_misses", "keyspace_misses_total"},
	{"total_error_replies", "error_replies_total"},
	{"rdb_saves", "rdb_saves_total"},
	{"aof_rewrites", "aof_rewrites_total"},
	{"sync_full", "replica_resyncs_full_total"},
	{"sync_partial_ok", "replica_partial_resync_accepted_total"},
	{"sync_partial_err", "replica_partial_resync_denied_total"},
	{"used_cpu_sys", "cpu_sys_seconds_total"},
	{"used_cpu_user", "cpu_user_seconds_total"},
	{"watchdog_slow_commands", "watchdog_slow_commands_total"},
	{"client_output_buffer_limit_disconnections", "client_output_buffer_limit_disconnections_total"},
	// netstats.go
	{"total_net_input_bytes", "net_input_bytes_total"},
	{"total_net_output_bytes", "net_output_bytes_total"},
	{"total_net_repl_input_bytes", "net_repl_input_bytes_total"},
	{"total_net_repl_output_bytes", "net_repl_output_bytes_total"},
}

// metricsText renders /metrics.
func (s *Server) metricsText() string {
	const ns = "damselfly_"
	m := &metricsWriter{seen: map[string]bool{}}
	info := s.infoMap()
	m.one(ns+"up", "gauge", "1 while the server answers.", 1)
	m.one(ns+"instance_info", "gauge", "The instance's version, role and mode as labels.", 1,
		"redis_version", RedisVersion, "damselfly_version", Version, "role", info["role"], "redis_mode", "standalone",
		"run_id", s.runID, "tcp_port", info["tcp_port"], "maxmemory_policy", info["maxmemory_policy"])
	for _, g := range infoGauges {
		if v, ok := num(info[g[0]]); ok {
			m.one(ns+g[1], "gauge", "INFO "+g[0]+".", v)
		}
	}
	for _, c := range infoCounters {
		if v, ok := num(info[c[0]]); ok {
			m.one(ns+c[1], "counter", "INFO "+c[0]+".", v)
		}
	}
	// Keys per database, replicas, errors: INFO's structured lines.
	keys := sortedInfoKeys(info)
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, "db") && strings.Contains(info[k], "keys="):
			f := subFields(info[k])
			n, _ := num(f["keys"])
			e, _ := num(f["expires"])
			m.family(ns+"db_keys", "gauge", "Keys per database.")
			m.sample(ns+"db_keys", []string{"db", k}, n)
			m.family(ns+"db_keys_expiring", "gauge", "Keys with a TTL per database.")
			m.sample(ns+"db_keys_expiring", []string{"db", k}, e)
		case strings.HasPrefix(k, "slave") && strings.Contains(info[k], "offset="):
			f := subFields(info[k])
			lbl := []string{"replica_ip", f["ip"], "replica_port", f["port"], "replica_state", f["state"]}
			off, _ := num(f["offset"])
			lag, _ := num(f["lag"])
			m.family(ns+"connected_replica_offset_bytes", "gauge", "Replication offset a replica acknowledged.")
			m.sample(ns+"connected_replica_offset_bytes", lbl, off)
			m.family(ns+"connected_replica_lag_seconds", "gauge", "Seconds since a replica's last acknowledgement.")
			m.sample(ns+"connected_replica_lag_seconds", lbl, lag)
		case strings.HasPrefix(k, "errorstat_"):
			n, _ := num(subFields(info[k])["count"])
			m.family(ns+"errors_total", "counter", "Error replies by their first word (INFO errorstats).")
			m.sample(ns+"errors_total", []string{"err", strings.TrimPrefix(k, "errorstat_")}, n)
		}
	}
	// Commands: calls, time, rejections, failures and latency histograms.
	for _, sn := range s.commandSnapshots(true) {
		lbl := []string{"cmd", sn.name}
		m.family(ns+"commands_total", "counter", "Runs per command.")
		m.sample(ns+"commands_total", lbl, float64(sn.calls))
		m.family(ns+"commands_duration_seconds_total", "counter", "Time spent per command.")
		m.sample(ns+"commands_duration_seconds_total", lbl, float64(sn.ns)/1e9)
		m.family(ns+"commands_rejected_calls_total", "counter", "Calls refused before running, per command.")
		m.sample(ns+"commands_rejected_calls_total", lbl, float64(sn.rejected))
		m.family(ns+"commands_failed_calls_total", "counter", "Calls that ran and answered an error, per command.")
		m.sample(ns+"commands_failed_calls_total", lbl, float64(sn.failed))
	}
	for _, sn := range s.commandSnapshots(true) {
		if sn.hist == nil || sn.hist.Total == 0 {
			continue
		}
		name := ns + "command_latency_seconds"
		m.family(name, "histogram", "Run time per command (latency-tracking).")
		cum := sn.hist.Cumulative(latencyBuckets)
		for i, b := range latencyBuckets {
			m.sample(name+"_bucket", []string{"cmd", sn.name, "le", strconv.FormatFloat(float64(b)/1e9, 'g', -1, 64)}, float64(cum[i]))
		}
		m.sample(name+"_bucket", []string{"cmd", sn.name, "le", "+Inf"}, float64(sn.hist.Total))
		// The sum is the counters' time: exact, while the buckets are
		// within 1/128.
		m.sample(name+"_sum", []string{"cmd", sn.name}, float64(sn.ns)/1e9)
		m.sample(name+"_count", []string{"cmd", sn.name}, float64(sn.hist.Total))
	}
	return m.b.String()
}

func sortedInfoKeys(info map[string]string) []string {
	out := make([]string, 0, len(info))
	for k := range info {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	io.WriteString(w, s.metricsText())
}
