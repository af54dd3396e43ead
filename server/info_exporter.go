package server

import (
	"fmt"
	"sync/atomic"
)

// infoExporterFields adds to an INFO section the fields Redis has that
// monitoring (redis_exporter, most dashboards) reads and the section did
// not show yet, where Damselfly has the figure: build identity, the largest
// client buffers, peak memory and fragmentation, and the fork counters
// (always 0: Damselfly never forks).
func (s *Server) infoExporterFields(section string, c *Client, field func(string, any)) {
	switch section {
	case "server":
		field("redis_git_sha1", "00000000")
		field("redis_git_dirty", 0)
		field("redis_build_id", "damselfly-"+Version)
		field("configured_hz", 10)
	case "clients":
		var in, out int64
		for _, cl := range s.clientList() {
			in = max(in, int64(cl.view.qbuf.Load()))
			o := int64(cl.view.obl.Load())
			if q := cl.view.outq.Load(); q != nil {
				o = max(o, int64(q.pending()))
			}
			out = max(out, o)
		}
		// Redis's "recent" maxima are over the last seconds; these are now.
		field("client_recent_max_input_buffer", in)
		field("client_recent_max_output_buffer", out)
	case "memory":
		used := s.usedMemory(c)
		peak := notePeak(&s.obs.memPeak, used)
		field("used_memory_peak", peak)
		field("used_memory_peak_human", humanBytes(peak))
		r := rss()
		ratio := 0.0
		if used > 0 {
			ratio = float64(r) / float64(used)
		}
		field("mem_fragmentation_ratio", fmt.Sprintf("%.2f", ratio))
		field("mem_fragmentation_bytes", r-used)
	case "stats":
		field("latest_fork_usec", 0)
		field("total_forks", 0)
		field("migrate_cached_sockets", 0)
		field("slave_expires_tracked_keys", 0)
	case "cpu":
		field("used_cpu_sys_children", "0.000000")
		field("used_cpu_user_children", "0.000000")
	}
}

// notePeak raises peak to v and returns the peak: used_memory_peak is the
// highest used_memory measured (by INFO, /metrics and the maxmemory cron).
func notePeak(peak *atomic.Int64, v int64) int64 {
	for {
		p := peak.Load()
		if v <= p {
			return p
		}
		if peak.CompareAndSwap(p, v) {
			return v
		}
	}
}
