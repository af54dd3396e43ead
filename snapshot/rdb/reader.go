package rdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/hdt3213/rdb/core"
	"github.com/hdt3213/rdb/model"
)

// Type is a value's Redis type.
type Type uint8

// Value types.
const (
	String Type = iota + 1
	List
	Set
	Hash
	ZSet
	Stream
)

func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case List:
		return "list"
	case Set:
		return "set"
	case Hash:
		return "hash"
	case ZSet:
		return "zset"
	case Stream:
		return "stream"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// ZMember is a sorted set member.
type ZMember struct {
	Member []byte
	Score  float64
}

// Entry is one key read from an RDB file. Only the field of its Type is set.
type Entry struct {
	DB         int
	Key        []byte
	Type       Type
	ExpireAtMs int64 // 0 = no expiry (Unix milliseconds otherwise)
	String     []byte
	List       [][]byte
	Set        [][]byte
	Hash       [][2][]byte // field, value; order unspecified
	// HashFieldExpireAtMs holds per-field expiries (RDB 12 hashes with
	// field TTLs, Redis 7.4); nil otherwise. 0 = no expiry.
	HashFieldExpireAtMs map[string]int64
	ZSet                []ZMember // order unspecified
	// Stream is the stream as stored in the file (stream.go).
	Stream *StreamValue
	// MCFlags are the memcached client flags an AuxMCFlags field right
	// before the key carried (Damselfly's extension); 0 = none.
	MCFlags uint32
	// Listpack is, with Options.Listpacks, a hash's (field, value, ...) or
	// a set's listpack as the file stores it, checked whole by
	// listpack.Validate, in fresh memory; ListpackLen is its element count.
	// Hash or Set is then nil: the caller decodes it (lpload.go).
	Listpack    []byte
	ListpackLen int
}

// Expired reports whether the key has expired at nowMs (Unix ms).
func (e *Entry) Expired(nowMs int64) bool { return e.ExpireAtMs > 0 && e.ExpireAtMs <= nowMs }

// Info describes a loaded file.
type Info struct {
	Version int
	// Valkey is set for a file with Valkey 9's "VALKEY" magic (whose
	// version numbers start at 80).
	Valkey   bool
	Aux      map[string]string
	Keys     int64 // entries passed to fn
	Expired  int64 // of those, already expired when Load started
	Warnings []string
	// Checksum is the CRC64 stored in the file; 0 means "not computed" (as
	// in Redis) and is not verified. ChecksumVerified tells whether it was.
	Checksum         uint64
	ChecksumVerified bool
	Bytes            int64 // bytes read, up to and including the checksum
	// Functions are the FUNCTION libraries' codes (RDB_OPCODE_FUNCTION2),
	// in file order.
	Functions []string
}

// Error is a malformed-file error: the file name, the byte offset where
// the problem was found and what was expected.
type Error struct {
	File   string
	Offset int64 // -1 when not tied to an offset (checksum mismatch)
	Msg    string
	Err    error // underlying cause, if any
}

func (e *Error) Error() string {
	if e.Offset < 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads an RDB stream (versions 1..12; the CRC64 is verified for 5+,
// unless the file stores 0) and calls fn for each key in file order. Keys
// already expired are passed too, with their ExpireAtMs, so the caller
// decides (a primary drops them, a replica keeps them; Entry.Expired helps).
// Module values (RDB_TYPE_MODULE_2) and module aux data are skipped with a
// warning in Info.Warnings; function libraries are returned in
// Info.Functions.
//
// Any truncation or corruption is an *Error naming the file and offset (or
// the checksum mismatch). fn may already have been called for earlier keys
// when an error is returned: on error, discard everything loaded. An error
// returned by fn stops the load and is returned as is.
func Load(r io.Reader, name string, fn func(e *Entry) error) (Info, error) {
	return LoadWith(r, name, Options{}, fn)
}

// Options adjust LoadWith.
type Options struct {
	// ResizeDB, when set, is called for each RESIZEDB opcode with the
	// number of keys, and of keys with an expiry, that the writer announced
	// for database db. They are hints: nothing checks them against the
	// keys that follow, so size only what stays bounded by the data.
	ResizeDB func(db int, keys, expires uint64)
	// Reuse lets Load reuse the Entry passed to fn, and the memory its Key
	// and String view, once fn returns: fn copies what it keeps. Collection
	// fields (List, Set, Hash, ZSet, Stream) are always fresh and may be kept.
	Reuse bool
	// BufSize is the read buffer's size (default 64 KiB); a caller reading
	// a small payload from memory (RESTORE) passes its length.
	BufSize int
	// Listpacks hands hashes and sets stored as listpacks over undecoded,
	// as Entry.Listpack, for a caller that builds its own structures from
	// them in one pass (snapshot.ValueWith).
	Listpacks bool

	slowStrings bool // tests: decode strings with github.com/hdt3213/rdb too
}

// LoadWith is Load with options.
//
// Plain string keys (the bulk of most dumps) are decoded by the framing
// reader itself, straight from its buffers (LZF into a reused buffer), and
// so are values in listpack encodings and streams; the old encodings go
// through github.com/hdt3213/rdb's decoder.
func LoadWith(r io.Reader, name string, opt Options, fn func(e *Entry) error) (Info, error) {
	info := Info{Aux: map[string]string{}}
	bufSize := 64 << 10
	if opt.BufSize > 0 {
		bufSize = min(opt.BufSize, bufSize)
	}
	sk := &skimmer{name: name, br: bufio.NewReaderSize(r, bufSize), crc: newCRC(), info: &info, opt: opt, fn: fn,
		nowMs: time.Now().UnixMilli()}
	dec := core.NewDecoder(sk).WithSpecialOpCode()
	var fnErr error
	perr := dec.Parse(func(o model.RedisObject) bool {
		switch o.(type) {
		case *model.AuxObject, *model.DBSizeObject, *model.FunctionsObject:
			return true
		}
		e, err := sk.convert(o)
		if err != nil {
			fnErr = sk.corrupt(err)
			return false
		}
		// The decoder asks for the next record only after this callback,
		// so the skimmer's state still describes the record of o.
		e.MCFlags = sk.recMCFlags
		if err := sk.emit(e); err != nil {
			fnErr = err
			return false
		}
		return true
	})
	info.Bytes = sk.off
	switch {
	case fnErr != nil:
		return info, fnErr
	case sk.err != nil:
		return info, sk.err
	case perr != nil:
		return info, sk.corrupt(perr)
	case !sk.done:
		return info, &Error{File: name, Offset: sk.off, Msg: "decoder stopped before the end of the file"}
	}
	return info, nil
}

func (s *skimmer) convert(o model.RedisObject) (*Entry, error) {
	e := &Entry{DB: o.GetDBIndex(), Key: []byte(o.GetKey())}
	if t := o.GetExpiration(); t != nil {
		e.ExpireAtMs = t.UnixMilli()
	}
	switch obj := o.(type) {
	case *model.StringObject:
		e.Type, e.String = String, obj.Value
	case *model.ListObject:
		e.Type, e.List = List, obj.Values
	case *model.SetObject:
		e.Type, e.Set = Set, obj.Members
	case *model.HashObject:
		e.Type = Hash
		e.Hash = make([][2][]byte, 0, len(obj.Hash))
		for f, v := range obj.Hash {
			e.Hash = append(e.Hash, [2][]byte{[]byte(f), v})
		}
		if obj.FieldExpirations != nil {
			e.HashFieldExpireAtMs = obj.FieldExpirations
		}
	case *model.ZSetObject:
		e.Type = ZSet
		e.ZSet = make([]ZMember, len(obj.Entries))
		for i, z := range obj.Entries {
			e.ZSet[i] = ZMember{Member: []byte(z.Member), Score: z.Score}
		}
	default: // streams and listpack values are decoded by the skimmer

		return nil, fmt.Errorf("unexpected decoded object %T", o)
	}
	return e, nil
}

// skimmer reads the file, frames each record (opcodes, key, value
// structure), checks lengths against the bytes that actually arrive, keeps
// the CRC64 and hands whole validated records to the decoder through Read.
type skimmer struct {
	name string
	br   *bufio.Reader
	crc  interface {
		Write([]byte) (int, error)
		Sum64() uint64
	}
	info    *Info
	off     int64 // bytes consumed from br
	version int
	valkey  bool // "VALKEY" magic: Valkey 9's numbering of types and opcodes

	rec    []byte // record being handed out
	recPos int
	crcd   int // rec[:crcd] is in crc
	err    error
	done   bool // EOF opcode and checksum handed out

	// current key record, for messages
	keyOff int64
	key    []byte
	typ    byte

	opt        Options
	fn         func(e *Entry) error
	nowMs      int64
	db         int    // SELECTDB in effect
	expireMs   int64  // expiry opcode of the current record (0 = none)
	mcFlags    uint32 // from an AuxMCFlags field, for the next key
	recMCFlags uint32 // the current key record's
	keyBuf     []byte // s.key's memory
	scratch    []byte // decoded (integer, LZF) key or aux key
	valBuf     []byte // decoded string value or aux value
	lpBuf      []byte // decoded listpack value being validated (lpcheck.go)
	entry      Entry  // reused for strings with Options.Reuse

}

// emit counts e and hands it to fn.
func (s *skimmer) emit(e *Entry) error {
	s.info.Keys++
	if e.Expired(s.nowMs) {
		s.info.Expired++
	}
	return s.fn(e)
}

// emitString hands a string key decoded by the skimmer to fn. key and val
// view the skimmer's buffers.
func (s *skimmer) emitString(key, val []byte) error {
	e := &s.entry // only ever used for strings: its other fields stay zero
	if s.opt.Reuse {
		e.Key, e.String = key, val
	} else {
		b := make([]byte, len(key)+len(val))
		n := copy(b, key)
		copy(b[n:], val)
		e = &Entry{Key: b[:n:n], String: b[n:]}
	}
	e.DB, e.Type, e.ExpireAtMs, e.MCFlags = s.db, String, s.expireMs, s.recMCFlags
	return s.emit(e)
}

func (s *skimmer) Read(p []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil { // a bug of ours: never hidden as "corrupt file"
			s.err = &Error{File: s.name, Offset: s.off, Msg: fmt.Sprintf("internal error: %v", r)}
			n, err = 0, s.err
		}
	}()
	for s.recPos >= len(s.rec) {
		if s.err != nil {
			return 0, s.err
		}
		if s.done {
			return 0, io.EOF
		}
		s.cut(0)
		s.recPos = 0
		if err := s.next(); err != nil {
			s.err = err
			s.rec, s.crcd = s.rec[:0], 0
		}
	}
	n = copy(p, s.rec[s.recPos:])
	s.recPos += n
	return n, nil
}

// corrupt wraps a decoder error with the record it happened in.
func (s *skimmer) corrupt(err error) error {
	if s.key == nil {
		return &Error{File: s.name, Offset: s.keyOff, Msg: "corrupt data: " + err.Error(), Err: err}
	}
	return &Error{File: s.name, Offset: s.keyOff, Msg: fmt.Sprintf("key %q (value type %d): corrupt value: %v", s.key, s.typ, err), Err: err}
}

func (s *skimmer) errorf(off int64, format string, args ...any) error {
	return &Error{File: s.name, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// sumRec adds the bytes of rec not yet in the CRC to it. The CRC covers
// rec a record at a time rather than a field at a time: most fields are a
// byte or two.
func (s *skimmer) sumRec() {
	s.crc.Write(s.rec[s.crcd:])
	s.crcd = len(s.rec)
}

// cut truncates rec to n bytes (what the decoder is not to see), after
// adding them to the CRC.
func (s *skimmer) cut(n int) {
	s.sumRec()
	s.rec, s.crcd = s.rec[:n], n
}

// read appends exactly n bytes from the input to rec, growing rec only as
// data arrives, so a bogus length cannot allocate more than the file holds.
// They enter the CRC when the record is cut or handed out (sumRec).
func (s *skimmer) read(n uint64, what string) ([]byte, error) {
	start := len(s.rec)
	if n <= uint64(s.br.Buffered()) { // the common case: no copy through io.ReadFull
		b, _ := s.br.Peek(int(n))
		s.rec = append(s.rec, b...)
		_, _ = s.br.Discard(int(n))
		s.off += int64(n)
		return s.rec[start:], nil
	}
	off := s.off
	var have uint64
	for have < n {
		chunk := min(n-have, 1<<20)
		l := len(s.rec)
		s.rec = slices.Grow(s.rec, int(chunk))[:l+int(chunk)]
		m, err := io.ReadFull(s.br, s.rec[l:])
		have += uint64(m)
		s.off += int64(m)
		if err != nil {
			s.rec = s.rec[:l+m]
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, s.errorf(off, "truncated %s (want %d bytes, have %d)", what, n, have)
			}
			return nil, &Error{File: s.name, Offset: s.off, Msg: "read error: " + err.Error(), Err: err}
		}
	}
	return s.rec[start:], nil
}

func (s *skimmer) byte1(what string) (byte, error) {
	b, err := s.read(1, what)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// length reads an RDB length. enc is true for the special (0xC0) forms,
// then n is the encoding type.
func (s *skimmer) length(what string) (n uint64, enc bool, err error) {
	off := s.off
	b, err := s.byte1(what)
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3f), false, nil
	case 1:
		c, err := s.byte1(what)
		if err != nil {
			return 0, false, err
		}
		return uint64(b&0x3f)<<8 | uint64(c), false, nil
	case 3:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case 0x80:
		x, err := s.read(4, what)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(x)), false, nil
	case 0x81:
		x, err := s.read(8, what)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(x), false, nil
	}
	return 0, false, s.errorf(off, "bad length encoding 0x%02x in %s", b, what)
}

// num reads a length used as a number (IDs, TTLs, module integers), not
// as a count: any 64-bit value is fine.
func (s *skimmer) num(what string) (uint64, error) {
	off := s.off
	n, enc, err := s.length(what)
	if err == nil && enc {
		err = s.errorf(off, "bad length encoding in %s", what)
	}
	return n, err
}

// maxCount bounds every length and count (1 TiB): it keeps arithmetic on
// counts from overflowing.
const maxCount = 1 << 40

// count reads a plain length (no special encodings).
func (s *skimmer) count(what string) (uint64, error) {
	off := s.off
	n, enc, err := s.length(what)
	if err == nil && enc {
		err = s.errorf(off, "bad length encoding in %s", what)
	}
	if err == nil && n > maxCount {
		err = s.errorf(off, "implausible %s %d", what, n)
	}
	return n, err
}

// str reads an RDB string. With decode, it returns the string's content
// (integers formatted, LZF decompressed, in fresh memory unless the string
// is plain); otherwise the raw bytes.
func (s *skimmer) str(what string, decode bool) ([]byte, error) {
	if !decode {
		return s.strDec(what, nil)
	}
	var b []byte
	return s.strDec(what, &b)
}

// strDec reads an RDB string. With a buffer, it returns the string's
// content: plain strings view rec, integers and LZF strings are decoded
// into *buf (reused). Without one, it returns the raw bytes.
func (s *skimmer) strDec(what string, buf *[]byte) ([]byte, error) {
	decode := buf != nil
	off := s.off
	n, enc, err := s.length(what)
	if err != nil {
		return nil, err
	}
	if !enc {
		if n > maxCount {
			return nil, s.errorf(off, "implausible %s length %d", what, n)
		}
		return s.read(n, what)
	}
	switch n {
	case encInt8:
		b, err := s.read(1, what)
		if err != nil || !decode {
			return b, err
		}
		*buf = strconv.AppendInt((*buf)[:0], int64(int8(b[0])), 10)
		return *buf, nil
	case encInt16:
		b, err := s.read(2, what)
		if err != nil || !decode {
			return b, err
		}
		*buf = strconv.AppendInt((*buf)[:0], int64(int16(binary.LittleEndian.Uint16(b))), 10)
		return *buf, nil
	case encInt32:
		b, err := s.read(4, what)
		if err != nil || !decode {
			return b, err
		}
		*buf = strconv.AppendInt((*buf)[:0], int64(int32(binary.LittleEndian.Uint32(b))), 10)
		return *buf, nil
	case encLZF:
		cwhat, uwhat := lzfWhat(what)
		clen, err := s.count(cwhat)
		if err != nil {
			return nil, err
		}
		ulen, err := s.count(uwhat)
		if err != nil {
			return nil, err
		}
		// An LZF back reference (3 bytes) expands to at most 264 bytes.
		if clen == 0 || ulen == 0 || ulen > clen*88+32 {
			return nil, s.errorf(off, "bad LZF lengths in %s (compressed %d, uncompressed %d)", what, clen, ulen)
		}
		b, err := s.read(clen, what)
		if err != nil || !decode {
			return b, err
		}
		out, err := lzfDecompress((*buf)[:0], b, int(ulen))
		if err != nil {
			return nil, s.errorf(off, "corrupt LZF data in %s", what)
		}
		*buf = out
		return out, nil
	}
	return nil, s.errorf(off, "unknown string encoding %d in %s", n, what)
}

// lzfWhat names an LZF string's two lengths for messages, without building
// strings for every compressed key and value.
func lzfWhat(what string) (compressed, length string) {
	switch what {
	case "key":
		return "key (compressed length)", "key (length)"
	case "value":
		return "value (compressed length)", "value (length)"
	}
	return what + " (compressed length)", what + " (length)"
}

func (s *skimmer) next() error {
	if s.version == 0 {
		return s.header()
	}
	if !s.opt.slowStrings {
		if err := s.fastStrings(); err != nil {
			return err
		}
	}
	s.startKey()
	for {
		off := s.off
		start := len(s.rec)
		op, err := s.byte1("opcode")
		if err != nil {
			return err
		}
		step, err := s.opcode(op, off, start)
		if step == stepNotOpcode {
			step, err = s.keyRecord(op, off, start)
		}
		if step == stepReturn || err != nil {
			return err
		}
	}
}

// startKey forgets the last key's record before the next is read.
func (s *skimmer) startKey() {
	s.key = nil
	s.keyOff = s.off
	s.expireMs = 0
}

// skimStep is what next does after a record: return (a record for the
// caller was read, or the file ended, or an error) or read on (the record
// was skipped or belongs to the key that follows).
type skimStep int

const (
	stepNotOpcode skimStep = iota // a key record: its type byte was read
	stepReturn
	stepReadOn
)

// opcode handles the record opcode op (read at off; start is where it
// begins in rec) unless it is a key's type.
func (s *skimmer) opcode(op byte, off int64, start int) (skimStep, error) {
	switch op {
	case opEOF:
		return stepReturn, s.eof()
	case opSelectDB:
		db, err := s.count("SELECTDB")
		s.db = int(db)
		return stepReturn, err
	case opResizeDB:
		return stepReturn, s.resizeDB()
	case opAux:
		if err := s.aux(off); err != nil {
			return stepReturn, err
		}
		s.cut(start) // handled here, not by the decoder
		return stepReadOn, nil
	case opExpireTime, opExpireTimeMs, opIdle, opFreq:
		return stepReadOn, s.keyPrefix(op) // part of the next key's record
	case opSlotInfo, opModuleAux, opFunction2, op243:
		if err := s.skippedRecord(op, off); err != nil {
			return stepReturn, err
		}
		s.cut(start) // not for the decoder
		return stepReadOn, nil
	case opFunctionPre:
		return stepReturn, s.errorf(off, "pre-release function format (opcode 246, Redis 7.0 release candidates) not supported")
	}
	return stepNotOpcode, nil
}

// resizeDB reads RESIZEDB's two sizes and passes them on.
func (s *skimmer) resizeDB() error {
	keys, err := s.num("RESIZEDB")
	if err != nil {
		return err
	}
	expires, err := s.num("RESIZEDB")
	if err == nil && s.opt.ResizeDB != nil {
		s.opt.ResizeDB(s.db, keys, expires)
	}
	return err
}

// keyPrefix reads an opcode that qualifies the key after it: its expiry
// (kept), its LRU idle time or LFU counter (read past).
func (s *skimmer) keyPrefix(op byte) error {
	switch op {
	case opExpireTime:
		b, err := s.read(4, "EXPIRETIME")
		if err != nil {
			return err
		}
		// As github.com/hdt3213/rdb: seconds, unsigned; 0 = none.
		s.expireMs = int64(binary.LittleEndian.Uint32(b)) * 1000
	case opExpireTimeMs:
		b, err := s.read(8, "EXPIRETIME_MS")
		if err != nil {
			return err
		}
		s.expireMs = max(int64(binary.LittleEndian.Uint64(b)), 0) // negative = none, as the decoder
	case opIdle:
		_, err := s.num("IDLE")
		return err
	case opFreq:
		_, err := s.read(1, "FREQ")
		return err
	}
	return nil
}

// skippedRecord reads a record that holds no key and is not for the
// decoder: slot info, module aux data (skipped with a warning), a function
// library (kept in Info), Valkey's slot import state or Redis 8.2's key
// metadata (refused).
func (s *skimmer) skippedRecord(op byte, off int64) error {
	switch op {
	case opSlotInfo:
		for range 3 {
			if _, err := s.count("SLOT_INFO"); err != nil {
				return err
			}
		}
	case opModuleAux:
		id, err := s.count("MODULE_AUX")
		if err != nil {
			return err
		}
		if err := s.moduleValue(); err != nil {
			return err
		}
		s.warn("offset %d: module aux data of module %s skipped", off, moduleName(id))
	case opFunction2:
		code, err := s.str("function library", true)
		if err != nil {
			return err
		}
		s.info.Functions = append(s.info.Functions, string(code))
	case op243:
		if !s.valkey {
			// Redis 8.2's key metadata, ahead of a key: what it holds
			// would be lost, so the file is refused.
			return s.errorf(off, "key metadata (opcode 243, RDB_OPCODE_KEY_META, Redis 8.2+) not supported")
		}
		return s.slotImport(off)
	}
	return nil
}

// slotImport skips Valkey 9's atomic slot migration in progress (job name
// and slot ranges): cluster state, not data, skipped as Valkey does
// outside cluster mode.
func (s *skimmer) slotImport(off int64) error {
	if _, err := s.str("SLOT_IMPORT job", false); err != nil {
		return err
	}
	n, err := s.count("SLOT_IMPORT range count")
	if err != nil {
		return err
	}
	for range 2 * n {
		if _, err := s.num("SLOT_IMPORT slot"); err != nil {
			return err
		}
	}
	s.warn("offset %d: Valkey slot import state (opcode 243) skipped", off)
	return nil
}

// keyRecord reads a key record of type op: a string straight to the
// fast path, a module value skipped with a warning (read on), any other
// value to the decoder.
func (s *skimmer) keyRecord(op byte, off int64, start int) (skimStep, error) {
	s.typ = op
	s.recMCFlags, s.mcFlags = s.mcFlags, 0
	key, err := s.strDec("key", &s.scratch)
	if err != nil {
		return stepReturn, err
	}
	s.key = append(s.keyBuf[:0], key...)
	s.keyBuf = s.key
	if op == typeString && !s.opt.slowStrings {
		val, err := s.strDec("value", &s.valBuf)
		if err != nil {
			return stepReturn, err
		}
		err = s.emitString(s.key, val) // (val may view rec)
		s.cut(0)                       // not for the decoder
		return stepReturn, err
	}
	if op == typeModule2 {
		id, err := s.count("module id")
		if err != nil {
			return stepReturn, err
		}
		if err := s.moduleValue(); err != nil {
			return stepReturn, err
		}
		s.warn("offset %d: key %q of module type %s skipped", off, s.key, moduleName(id))
		s.cut(0)
		s.startKey()
		return stepReadOn, nil
	}
	return stepReturn, s.value(op)
}

// aux reads an AUX field (opcode at off): Damselfly's memcached flags for
// the next key, or an entry of Info.Aux.
func (s *skimmer) aux(off int64) error {
	k, err := s.strDec("aux key", &s.scratch)
	if err != nil {
		return err
	}
	v, err := s.strDec("aux value", &s.valBuf)
	if err != nil {
		return err
	}
	if string(k) == AuxMCFlags {
		f, err := strconv.ParseUint(string(v), 10, 32)
		if err != nil {
			return s.errorf(off, "bad %s aux value %q (want a 32-bit unsigned integer)", AuxMCFlags, v)
		}
		s.mcFlags = uint32(f)
		return nil
	}
	s.info.Aux[string(k)] = string(v)
	return nil
}

func (s *skimmer) warn(format string, args ...any) {
	s.info.Warnings = append(s.info.Warnings, s.name+": "+fmt.Sprintf(format, args...))
}

func (s *skimmer) header() error {
	b, err := s.read(9, "header")
	if err != nil {
		return err
	}
	if string(b[:6]) == "VALKEY" {
		// Valkey 9+: "VALKEY" and a 3-digit version from 80 on (12..79
		// are Redis's, which Valkey calls foreign).
		v, err := strconv.Atoi(string(b[6:9]))
		switch {
		case err != nil || v < ValkeyMinVersion:
			return s.errorf(6, "bad Valkey RDB version %q (Valkey's magic is used from version %d)", b[6:9], ValkeyMinVersion)
		case v > ValkeyMaxVersion:
			return s.errorf(6, "Valkey RDB version %d is newer than supported (%d)", v, ValkeyMaxVersion)
		}
		s.version, s.valkey = v, true
		s.info.Version, s.info.Valkey = v, true
		return nil
	}
	if string(b[:5]) != "REDIS" {
		return s.errorf(0, "not an RDB file (want \"REDIS\" or \"VALKEY\" magic, have %q)", b[:5])
	}
	v, err := strconv.Atoi(string(b[5:9]))
	if err != nil || v < 1 {
		return s.errorf(5, "bad RDB version %q", b[5:9])
	}
	if v > MaxVersion {
		return s.errorf(5, "RDB version %d is newer than supported (%d: Redis 7.4 and 8.0)", v, MaxVersion)
	}
	s.version = v
	s.info.Version = v
	return nil
}

func (s *skimmer) eof() error {
	if s.version < 5 {
		s.done = true
		return nil
	}
	s.sumRec() // up to and including the EOF opcode
	sum := s.crc.Sum64()
	b, err := s.read(8, "checksum")
	if err != nil {
		return err
	}
	file := binary.LittleEndian.Uint64(b)
	s.info.Checksum = file
	if file != 0 {
		if file != sum {
			return &Error{File: s.name, Offset: -1, Msg: fmt.Sprintf("checksum mismatch (file says %016x, computed %016x)", file, sum)}
		}
		s.info.ChecksumVerified = true
	} else {
		s.warn("file saved without a checksum: not verified")
	}
	s.done = true
	return nil
}

const moduleCharset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func moduleName(id uint64) string {
	var b [9]byte
	id >>= 10
	for j := 8; j >= 0; j-- {
		b[j] = moduleCharset[id&63]
		id >>= 6
	}
	return string(b[:])
}

// moduleValue skips a module value serialized with opcodes (RDB_TYPE_MODULE_2).
func (s *skimmer) moduleValue() error {
	for {
		off := s.off
		op, err := s.count("module opcode")
		if err != nil {
			return err
		}
		switch op {
		case 0: // EOF
			return nil
		case 1, 2: // SINT, UINT
			_, err = s.num("module integer")
		case 3:
			_, err = s.read(4, "module float")
		case 4:
			_, err = s.read(8, "module double")
		case 5:
			_, err = s.str("module string", false)
		default:
			return s.errorf(off, "unknown module opcode %d", op)
		}
		if err != nil {
			return err
		}
	}
}

func (s *skimmer) strings(n uint64, what string) error {
	for range n {
		if _, err := s.str(what, false); err != nil {
			return err
		}
	}
	return nil
}

// value frames the value of type typ (its type byte and key just read):
// the old encodings for the decoder, listpack values and streams decoded
// and handed out here.
func (s *skimmer) value(typ byte) error {
	if s.valkey && typ > typeHashMetaPreGA {
		return s.errorf(s.keyOff, "key %q: value type %d is not one of Valkey 9's (RDB_TYPE_HASH_2 = 22 is the last)", s.key, typ)
	}
	switch typ {
	case typeString, typeHashZipmap, typeListZiplist, typeZSetZiplist, typeHashZiplist:
		_, err := s.str("value", false)
		return err
	case typeSetListpack, typeHashListpack, typeZSetListpack, typeHashLpExPreGA, typeHashLpEx, typeListQuicklist2:
		return s.lpValue(typ) // lpload.go: decoded and handed out here
	case typeList:
		return s.plainList() // collload.go: decoded and handed out here
	case typeZSet2:
		return s.zset2() // collload.go
	case typeSet, typeListQuicklist:
		n, err := s.count("element count")
		if err != nil {
			return err
		}
		return s.strings(n, "element")
	case typeHash:
		n, err := s.count("field count")
		if err != nil {
			return err
		}
		return s.strings(2*n, "field or value")
	case typeZSet:
		return s.zsetValue()
	case typeSetIntset:
		return s.intsetValue()
	case typeHashMetaPreGA, typeHashMeta:
		if s.valkey {
			return s.valkeyHash2Value()
		}
		return s.hashMetaValue(typ)
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		return s.stream(typ)
	case typeModule:
		return s.errorf(s.keyOff, "key %q: module type v1 values cannot be loaded", s.key)
	}
	return s.errorf(s.keyOff, "key %q: unknown value type %d", s.key, typ)
}

// zsetValue frames an old sorted set (RDB_TYPE_ZSET: string scores, whose
// 253-255 lengths are NaN and infinities) for the decoder.
func (s *skimmer) zsetValue() error {
	n, err := s.count("member count")
	if err != nil {
		return err
	}
	for range n {
		if _, err := s.str("member", false); err != nil {
			return err
		}
		l, err := s.byte1("score")
		if err != nil {
			return err
		}
		if l < 253 {
			if _, err := s.read(uint64(l), "score"); err != nil {
				return err
			}
		}
	}
	return nil
}

// intsetValue reads an intset and checks its header against its size.
func (s *skimmer) intsetValue() error {
	off := s.off
	b, err := s.str("intset", true)
	if err != nil {
		return err
	}
	if len(b) < 8 {
		return s.errorf(off, "intset too short (%d bytes)", len(b))
	}
	w := uint64(binary.LittleEndian.Uint32(b))
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	if (w != 2 && w != 4 && w != 8) || 8+w*n != uint64(len(b)) {
		return s.errorf(off, "corrupt intset (encoding %d, %d members, %d bytes)", w, n, len(b))
	}
	return nil
}

// valkeyHash2Value reads Valkey 9's RDB_TYPE_HASH_2 (22): field, value,
// expiry (ms, -1 = none).
func (s *skimmer) valkeyHash2Value() error {
	n, err := s.count("field count")
	if err != nil {
		return err
	}
	for range n {
		if err := s.strings(2, "field or value"); err != nil {
			return err
		}
		if _, err := s.read(8, "field expiry"); err != nil {
			return err
		}
	}
	return nil
}

// hashMetaValue reads Redis's hash with field TTLs (HASH_METADATA, and its
// pre-GA form without the minimum expiry): per field a TTL, field, value.
func (s *skimmer) hashMetaValue(typ byte) error {
	if typ == typeHashMeta {
		if _, err := s.read(8, "hash min expire"); err != nil {
			return err
		}
	}
	n, err := s.count("field count")
	if err != nil {
		return err
	}
	for range n {
		if _, err := s.num("field ttl"); err != nil {
			return err
		}
		if err := s.strings(2, "field or value"); err != nil {
			return err
		}
	}
	return nil
}
