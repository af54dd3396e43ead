package resp

import "strconv"

// AppendCommand appends args as a RESP array of bulk strings, the form in
// which a client sends a command (and in which commands travel in the
// replication stream and the AOF).
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = appendHeader(b, '*', int64(len(args)))
	for _, a := range args {
		b = appendHeader(b, '$', int64(len(a)))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// AppendCommandStrings is AppendCommand for string arguments.
func AppendCommandStrings(b []byte, args ...string) []byte {
	b = appendHeader(b, '*', int64(len(args)))
	for _, a := range args {
		b = appendHeader(b, '$', int64(len(a)))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

func appendHeader(b []byte, t byte, n int64) []byte {
	b = append(b, t)
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}
