package server

import "github.com/damselflydb/damselfly/resp"

// The request reader and its helpers live in the leaf package resp; these
// names keep the server's many call sites (parseInt above all) unchanged.
type parser = resp.RequestReader

func newParser() *parser { return resp.NewRequestReader() }

const defaultMaxBulkBytes = resp.DefaultMaxBulkLen

var (
	errNeedMore       = resp.ErrNeedMore
	errEmptyMultibulk = resp.ErrEmptyMultibulk
)

func parseInt(b []byte) (int64, bool) { return resp.ParseInt(b) }

func isSpace(c byte) bool { return resp.IsSpace(c) }

func splitArgs(line []byte, out [][]byte) ([][]byte, bool) { return resp.SplitArgs(line, out) }
