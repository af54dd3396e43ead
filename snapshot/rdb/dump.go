package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
)

// Errors Restore returns, with Redis's reply texts.
var (
	ErrDumpPayload   = errors.New("DUMP payload version or checksum are wrong")
	ErrBadDataFormat = errors.New("Bad data format")
)

// Dumper encodes DUMP payloads: the RDB value encoding (type byte + value),
// the 2-byte little-endian RDB version and the CRC64 of all that, exactly as
// Redis's DUMP. The zero value writes DefaultVersion with DefaultLimits.
type Dumper struct {
	Version int
	Limits  Limits
}

func (d Dumper) run(f func(w *Writer) error) ([]byte, error) {
	var buf bytes.Buffer
	w := newWriterSize(&buf, d.Version, 512)
	w.SetLimits(d.Limits)
	w.dump = true
	if err := f(w); err != nil {
		return nil, err
	}
	if w.err != nil {
		return nil, w.err
	}
	var v [2]byte
	binary.LittleEndian.PutUint16(v[:], uint16(w.version))
	w.write(v[:])
	sum := w.crc.Sum64()
	if err := w.bw.Flush(); err != nil {
		return nil, err
	}
	return binary.LittleEndian.AppendUint64(buf.Bytes(), sum), nil
}

// String returns the DUMP payload of a string value.
func (d Dumper) String(val []byte) ([]byte, error) {
	return d.run(func(w *Writer) error { return w.String(nil, val, 0) })
}

// List returns the DUMP payload of a list of n elements.
func (d Dumper) List(n int, elems iter.Seq[[]byte]) ([]byte, error) {
	return d.run(func(w *Writer) error { return w.List(nil, 0, n, elems) })
}

// Set returns the DUMP payload of a set of n members.
func (d Dumper) Set(n int, members iter.Seq[[]byte]) ([]byte, error) {
	return d.run(func(w *Writer) error { return w.Set(nil, 0, n, members) })
}

// Hash returns the DUMP payload of a hash of n fields.
func (d Dumper) Hash(n int, fields iter.Seq2[[]byte, []byte]) ([]byte, error) {
	return d.run(func(w *Writer) error { return w.Hash(nil, 0, n, fields) })
}

// ZSet returns the DUMP payload of a sorted set of n members.
func (d Dumper) ZSet(n int, members iter.Seq2[[]byte, float64]) ([]byte, error) {
	return d.run(func(w *Writer) error { return w.ZSet(nil, 0, n, members) })
}

// DumpString returns the DUMP payload (RDB 10) of a string value.
func DumpString(val []byte) []byte {
	p, err := Dumper{}.String(val)
	if err != nil {
		panic(err) // cannot happen: writes to memory
	}
	return p
}

// DumpList returns the DUMP payload (RDB 10) of a list; it fails only when
// elems is empty.
func DumpList(elems [][]byte) ([]byte, error) {
	return Dumper{}.List(len(elems), slices.Values(elems))
}

// DumpSet returns the DUMP payload (RDB 10) of a set of distinct members.
func DumpSet(members [][]byte) ([]byte, error) {
	return Dumper{}.Set(len(members), slices.Values(members))
}

// DumpHash returns the DUMP payload (RDB 10) of a hash.
func DumpHash(fields [][2][]byte) ([]byte, error) {
	return Dumper{}.Hash(len(fields), func(yield func([]byte, []byte) bool) {
		for _, f := range fields {
			if !yield(f[0], f[1]) {
				return
			}
		}
	})
}

// DumpZSet returns the DUMP payload (RDB 10) of a sorted set.
func DumpZSet(members []ZMember) ([]byte, error) {
	return Dumper{}.ZSet(len(members), func(yield func([]byte, float64) bool) {
		for _, m := range members {
			if !yield(m.Member, m.Score) {
				return
			}
		}
	})
}

// VerifyPayload checks a DUMP payload's footer like Redis's verifyDumpPayload:
// RDB version <= MaxVersion and a matching CRC64. It returns the version.
func VerifyPayload(p []byte) (int, error) {
	if len(p) < 10 {
		return 0, ErrDumpPayload
	}
	footer := p[len(p)-10:]
	ver := int(binary.LittleEndian.Uint16(footer))
	if ver > MaxVersion {
		return 0, ErrDumpPayload
	}
	if binary.LittleEndian.Uint64(footer[2:]) != crc64(p[:len(p)-8]) {
		return 0, ErrDumpPayload
	}
	return ver, nil
}

// Restore decodes a DUMP payload. A bad footer gives exactly ErrDumpPayload;
// an undecodable value (or a module value) gives ErrBadDataFormat.
func Restore(payload []byte) (*Entry, error) {
	ver, err := VerifyPayload(payload)
	if err != nil {
		return nil, err
	}
	body := payload[:len(payload)-10]
	if len(body) == 0 {
		return nil, ErrBadDataFormat
	}
	// The common case, a plain (not integer-encoded, not compressed)
	// string, is read in place: a slot migration restores keys by the
	// hundred thousand.
	if body[0] == typeString {
		if n, p, special, ok := bufLen(body, 1); ok && !special && n == uint64(len(body)-p) {
			return &Entry{Type: String, String: append([]byte(nil), body[p:]...)}, nil
		}
	}
	// Frame it as a one-key RDB file: header, type, empty key, value, EOF,
	// checksum.
	hv := max(ver, 5)
	stream := make([]byte, 0, len(body)+20)
	stream = fmt.Appendf(stream, "REDIS%04d", hv)
	stream = append(stream, body[0], 0)
	stream = append(stream, body[1:]...)
	stream = append(stream, opEOF)
	stream = binary.LittleEndian.AppendUint64(stream, crc64(stream))
	var got *Entry
	// The payload is in memory: a read buffer of its size, not Load's
	// 64 KiB (a slot migration restores keys by the hundred thousand).
	info, err := LoadWith(bytes.NewReader(stream), "DUMP payload", Options{BufSize: len(stream)}, func(e *Entry) error {
		if got != nil {
			return ErrBadDataFormat
		}
		got = e
		return nil
	})
	if err != nil || got == nil || len(info.Warnings) > 0 || info.Bytes != int64(len(stream)) {
		return nil, ErrBadDataFormat
	}
	got.Key = nil
	return got, nil
}
