package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Function writes one FUNCTION library as Redis 7 stores it: the
// RDB_OPCODE_FUNCTION2 opcode and the library's whole code (its "#!lua
// name=..." line included) as a string. Redis writes them after the AUX
// fields, before the first database.
func (w *Writer) Function(code []byte) error {
	w.writeByte(opFunction2)
	w.writeString(code)
	return w.err
}

// DumpFunctions returns FUNCTION DUMP's payload: each library as in an RDB
// file, then the 2-byte RDB version and the CRC64, as a DUMP payload.
func DumpFunctions(codes []string) ([]byte, error) {
	return Dumper{}.run(func(w *Writer) error {
		for _, c := range codes {
			if err := w.Function([]byte(c)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Errors of RestoreFunctions, with Redis's reply texts.
var (
	ErrNotFunction       = errors.New("given type is not a function")
	ErrFunctionsPayload  = errors.New("failed loading the given functions payload")
	errStopAtFirstRecord = errors.New("record")
)

// RestoreFunctions decodes FUNCTION DUMP's payload into the libraries'
// codes (ErrDumpPayload for a bad footer).
func RestoreFunctions(p []byte) ([]string, error) {
	ver, err := VerifyPayload(p)
	if err != nil {
		return nil, err
	}
	// The body is a run of RDB records: read it as a file holding only
	// them (a stored checksum of 0 is not verified).
	var b bytes.Buffer
	b.WriteString("REDIS")
	b.WriteString(string([]byte{'0' + byte(ver/1000%10), '0' + byte(ver/100%10), '0' + byte(ver/10%10), '0' + byte(ver%10)}))
	body := p[:len(p)-10]
	if len(body) > 0 && body[0] != opFunction2 {
		return nil, ErrNotFunction
	}
	b.Write(body)
	b.WriteByte(opEOF)
	b.Write(binary.LittleEndian.AppendUint64(nil, 0))
	info, err := Load(&b, "payload", func(e *Entry) error { return errStopAtFirstRecord })
	if errors.Is(err, errStopAtFirstRecord) {
		return nil, ErrNotFunction
	}
	if err != nil {
		return nil, ErrFunctionsPayload
	}
	return info.Functions, nil
}
