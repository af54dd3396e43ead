// Package block frames a byte stream as a sequence of independently
// compressed blocks, each carrying the CRC-32C of its uncompressed bytes, so
// that a reader detects corruption block by block and names the offset.
//
// Stream layout: the 8-byte magic "DFBLOCK1", then blocks. A block is
//
//	codec      1 byte (Raw, S2 or Zstd)
//	rawLen     uvarint, 1..MaxBlock
//	storedLen  uvarint, at most MaxStored
//	crc        4 bytes little-endian, CRC-32C (Castagnoli) of the raw bytes
//	stored     storedLen bytes
//
// The stream ends at a block boundary (io.EOF there, io.ErrUnexpectedEOF
// anywhere else). Whole-stream truncation at a block boundary is detected by
// the caller (package snapshot records each file's length and CRC-32C in its
// summary, and the payload is an RDB stream with its own EOF and CRC64).
//
// Invariants: a Writer emits only blocks a Reader accepts; a Reader never
// allocates more than MaxStored+MaxBlock per block whatever the input says.
package block

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Codec is a block's compression.
type Codec byte

const (
	Raw  Codec = 0
	S2   Codec = 1
	Zstd Codec = 2
)

func (c Codec) String() string {
	switch c {
	case Raw:
		return "none"
	case S2:
		return "s2"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", byte(c))
}

// ParseCodec parses "none", "s2" or "zstd".
func ParseCodec(s string) (Codec, error) {
	switch s {
	case "none", "raw":
		return Raw, nil
	case "s2":
		return S2, nil
	case "zstd":
		return Zstd, nil
	}
	return 0, fmt.Errorf("unknown compression %q (want none, s2 or zstd)", s)
}

// Magic starts every stream.
const Magic = "DFBLOCK1"

const (
	// BlockSize is how many raw bytes a Writer gathers per block.
	BlockSize = 1 << 20
	// MaxBlock is the largest raw block a Reader accepts.
	MaxBlock = 4 << 20
	// MaxStored is the largest stored (compressed) block a Reader accepts.
	MaxStored = MaxBlock + MaxBlock/8 + 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Writer compresses what is written to it into blocks. It is not safe for
// concurrent use.
type Writer struct {
	w     io.Writer
	codec Codec
	level int
	zenc  *zstd.Encoder
	raw   []byte
	out   []byte
	n     int64  // bytes written to w
	crc   uint32 // CRC-32C of everything written to w
	rawN  int64
	err   error
}

// NewWriter writes the magic and returns a Writer. level is the codec's
// level: for S2 1 (default), 2 (better) or 3 (best); for zstd 1 (fastest)
// to 4 (best), 0 meaning the default (2).
func NewWriter(w io.Writer, codec Codec, level int) (*Writer, error) {
	bw := &Writer{w: w, codec: codec, level: level, raw: make([]byte, 0, BlockSize)}
	switch codec {
	case Raw, S2:
	case Zstd:
		lvl := zstd.SpeedDefault
		if level > 0 {
			lvl = zstd.EncoderLevel(min(level, int(zstd.SpeedBestCompression)))
		}
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(lvl), zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true))
		if err != nil {
			return nil, err
		}
		bw.zenc = enc
	default:
		return nil, fmt.Errorf("block: unknown codec %d", codec)
	}
	bw.emit([]byte(Magic))
	return bw, bw.err
}

func (bw *Writer) emit(p []byte) {
	if bw.err != nil {
		return
	}
	n, err := bw.w.Write(p)
	bw.n += int64(n)
	bw.crc = crc32.Update(bw.crc, castagnoli, p[:n])
	bw.err = err
}

// Write buffers p, emitting full blocks.
func (bw *Writer) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 && bw.err == nil {
		room := BlockSize - len(bw.raw)
		k := min(room, len(p))
		bw.raw = append(bw.raw, p[:k]...)
		p = p[k:]
		if len(bw.raw) >= BlockSize {
			bw.flushBlock()
		}
	}
	if bw.err != nil {
		return 0, bw.err
	}
	return total, nil
}

func (bw *Writer) flushBlock() {
	if len(bw.raw) == 0 || bw.err != nil {
		return
	}
	codec := bw.codec
	var stored []byte
	switch codec {
	case S2:
		dst := bw.out[:cap(bw.out)]
		switch bw.level {
		case 2:
			stored = s2.EncodeBetter(dst, bw.raw)
		case 3:
			stored = s2.EncodeBest(dst, bw.raw)
		default:
			stored = s2.Encode(dst, bw.raw)
		}
	case Zstd:
		stored = bw.zenc.EncodeAll(bw.raw, bw.out[:0])
	}
	if codec != Raw && len(stored) >= len(bw.raw) {
		codec, stored = Raw, nil // incompressible: store it as is
	}
	if codec == Raw {
		stored = bw.raw
	} else {
		bw.out = stored
	}
	var hdr [1 + 2*binary.MaxVarintLen64 + 4]byte
	hdr[0] = byte(codec)
	h := 1
	h += binary.PutUvarint(hdr[h:], uint64(len(bw.raw)))
	h += binary.PutUvarint(hdr[h:], uint64(len(stored)))
	binary.LittleEndian.PutUint32(hdr[h:], crc32.Checksum(bw.raw, castagnoli))
	h += 4
	bw.emit(hdr[:h])
	bw.emit(stored)
	bw.rawN += int64(len(bw.raw))
	bw.raw = bw.raw[:0]
}

// Close emits the last block (it does not close the underlying writer).
func (bw *Writer) Close() error {
	bw.flushBlock()
	if bw.zenc != nil {
		_ = bw.zenc.Close()
	}
	return bw.err
}

// Size is the number of bytes written to the underlying writer, CRC their
// CRC-32C, RawSize the uncompressed bytes emitted in blocks so far.
func (bw *Writer) Size() int64    { return bw.n }
func (bw *Writer) CRC() uint32    { return bw.crc }
func (bw *Writer) RawSize() int64 { return bw.rawN }

// ErrCorrupt is wrapped by every error about the stream's content.
var ErrCorrupt = errors.New("corrupt block stream")

// Reader decompresses and checks a stream written by Writer.
type Reader struct {
	r     *bufio.Reader
	name  string
	off   int64 // offset in the stream of the next byte of r
	raw   []byte
	pos   int
	buf   []byte
	zdec  *zstd.Decoder
	err   error
	magic bool
}

// NewReader reads a stream; name is used in errors.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 256<<10), name: name}
}

func (br *Reader) corrupt(format string, a ...any) error {
	return fmt.Errorf("%s: offset %d: %w: %s", br.name, br.off, ErrCorrupt, fmt.Sprintf(format, a...))
}

func (br *Reader) readFull(p []byte) error {
	n, err := io.ReadFull(br.r, p)
	br.off += int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func (br *Reader) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(byteCounter{br})
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return v, err
}

type byteCounter struct{ br *Reader }

func (b byteCounter) ReadByte() (byte, error) {
	c, err := b.br.r.ReadByte()
	if err == nil {
		b.br.off++
	}
	return c, err
}

// next reads and checks the next block.
func (br *Reader) next() error {
	if !br.magic {
		var m [len(Magic)]byte
		if err := br.readFull(m[:]); err != nil || string(m[:]) != Magic {
			return br.corrupt("not a block stream (bad magic)")
		}
		br.magic = true
	}
	start := br.off
	codec, err := br.r.ReadByte()
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return err
	}
	br.off++
	rawLen, err := br.uvarint()
	if err != nil {
		return fmt.Errorf("%s: offset %d: %w", br.name, start, err)
	}
	storedLen, err := br.uvarint()
	if err != nil {
		return fmt.Errorf("%s: offset %d: %w", br.name, start, err)
	}
	if rawLen == 0 || rawLen > MaxBlock || storedLen > MaxStored || (Codec(codec) == Raw && storedLen != rawLen) {
		return br.corrupt("block at %d: bad lengths (raw %d, stored %d)", start, rawLen, storedLen)
	}
	var crcb [4]byte
	if err := br.readFull(crcb[:]); err != nil {
		return fmt.Errorf("%s: block at %d: %w", br.name, start, err)
	}
	if cap(br.buf) < int(storedLen) {
		br.buf = make([]byte, storedLen)
	}
	stored := br.buf[:storedLen]
	if err := br.readFull(stored); err != nil {
		return fmt.Errorf("%s: block at %d: %w", br.name, start, err)
	}
	switch Codec(codec) {
	case Raw:
		br.raw = append(br.raw[:0], stored...)
	case S2:
		n, err := s2.DecodedLen(stored)
		if err != nil || n != int(rawLen) {
			return br.corrupt("block at %d: s2 length %d, want %d (%v)", start, n, rawLen, err)
		}
		if cap(br.raw) < n {
			br.raw = make([]byte, n)
		}
		out, err := s2.Decode(br.raw[:n], stored)
		if err != nil {
			return br.corrupt("block at %d: s2: %v", start, err)
		}
		br.raw = out
	case Zstd:
		if br.zdec == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxBlock))
			if err != nil {
				return err
			}
			br.zdec = d
		}
		out, err := br.zdec.DecodeAll(stored, br.raw[:0])
		if err != nil {
			return br.corrupt("block at %d: zstd: %v", start, err)
		}
		br.raw = out
	default:
		return br.corrupt("block at %d: unknown codec %d", start, codec)
	}
	if len(br.raw) != int(rawLen) {
		return br.corrupt("block at %d: %d bytes decompressed, want %d", start, len(br.raw), rawLen)
	}
	if crc32.Checksum(br.raw, castagnoli) != binary.LittleEndian.Uint32(crcb[:]) {
		return br.corrupt("block at %d: checksum mismatch", start)
	}
	br.pos = 0
	return nil
}

// Read returns decompressed, checked bytes.
func (br *Reader) Read(p []byte) (int, error) {
	for br.pos >= len(br.raw) {
		if br.err != nil {
			return 0, br.err
		}
		if err := br.next(); err != nil {
			br.err = err
			br.raw, br.pos = br.raw[:0], 0
			return 0, err
		}
	}
	n := copy(p, br.raw[br.pos:])
	br.pos += n
	return n, nil
}

// Close releases the decoder.
func (br *Reader) Close() {
	if br.zdec != nil {
		br.zdec.Close()
		br.zdec = nil
	}
}
