package shard

import "sync/atomic"

// LFU (maxmemory-policy allkeys-lfu / volatile-lfu), Redis's logarithmic
// access counter. It shares the entry's 24-bit access field with the LRU
// clock, as Redis shares robj.lru: with LFU on, the field holds the minute
// of the last decrement (16 bits, unix minutes mod 65536) and an 8-bit
// counter. A new key starts at LFUInitVal; an access first decays the
// counter by one per lfu-decay-time minutes elapsed, then increments it with
// probability 1/((counter-LFUInitVal)*lfu-log-factor+1). Switching policy
// at run time reinterprets the field; values adjust as keys are accessed
// (Redis behaves the same).

// LFUInitVal is the counter of a new key (Redis's LFU_INIT_VAL).
const LFUInitVal = 5

// lfuConfig is the store's LFU switch and parameters, shared by its shards
// and read with atomic loads (CONFIG SET changes them at any time).
type lfuConfig struct {
	on        atomic.Bool
	logFactor atomic.Int32
	decayTime atomic.Int32
}

// SetLFU turns LFU accounting on or off (the maxmemory-policy is an LFU
// one) with Redis's lfu-log-factor and lfu-decay-time.
func (s *Store) SetLFU(on bool, logFactor, decayTime int) {
	s.lfu.logFactor.Store(int32(logFactor))
	s.lfu.decayTime.Store(int32(decayTime))
	s.lfu.on.Store(on)
}

// LFU reports whether LFU accounting is on.
func (s *Store) LFU() bool { return s.lfu.on.Load() }

// lfuMinutes is Redis's LFUGetTimeInMinutes at unix milliseconds ms.
func lfuMinutes(ms int64) uint32 { return uint32(ms/60000) & 65535 }

// lfuElapsed is how many minutes passed since ldt (wrapping once, as
// Redis's LFUTimeElapsed).
func lfuElapsed(ldt, now uint32) uint32 {
	if now >= ldt {
		return now - ldt
	}
	return 65535 - ldt + now
}

// LFUCounter is the decayed counter of an entry's access field at unix
// minutes now (Redis's LFUDecrAndReturn): what OBJECT FREQ shows and what
// LFU eviction ranks by.
func (s *Store) LFUCounter(atime uint32, nowMs int64) int {
	return lfuDecr(atime, lfuMinutes(nowMs), int(s.lfu.decayTime.Load()))
}

func lfuDecr(atime, now uint32, decay int) int {
	counter := int(atime & 255)
	if decay <= 0 {
		return counter
	}
	periods := int(lfuElapsed(atime>>8, now)) / decay
	if periods > counter {
		return 0
	}
	return counter - periods
}

// lfuAccess is the access field after an access at unix minutes now.
func (d *DB) lfuAccess(atime, now uint32) uint32 {
	l := d.lfu
	counter := lfuDecr(atime, now, int(l.decayTime.Load()))
	if counter < 255 {
		base := float64(counter - LFUInitVal)
		if base < 0 {
			base = 0
		}
		p := 1.0 / (base*float64(l.logFactor.Load()) + 1)
		if d.rand01() < p {
			counter++
		}
	}
	return now<<8 | uint32(counter)
}

// rand01 is a uniform float in [0,1) from the DB's own generator (used
// under the shard lock).
func (d *DB) rand01() float64 {
	d.rnd ^= d.rnd << 13
	d.rnd ^= d.rnd >> 7
	d.rnd ^= d.rnd << 17
	return float64(d.rnd>>11) / (1 << 53)
}

// newAtime is the access field of an entry created now.
func (d *DB) newAtime() uint32 {
	if d.lfu != nil && d.lfu.on.Load() {
		return *d.minutes<<8 | LFUInitVal
	}
	return *d.clock
}

// SetFreq sets e's LFU counter (RESTORE ... FREQ); a no-op unless LFU is on.
func (d *DB) SetFreq(e *Entry, freq int) {
	if d.lfu == nil || !d.lfu.on.Load() {
		return
	}
	at := *d.minutes<<8 | uint32(freq&255)
	setAtime(d.slab.Bytes(e.ref), at)
	e.hdr.atime = at
}

// LFUParams are the current lfu-log-factor and lfu-decay-time.
func (s *Store) LFUParams() (logFactor, decayTime int) {
	return int(s.lfu.logFactor.Load()), int(s.lfu.decayTime.Load())
}
