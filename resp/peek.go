package resp

// peekMaxArgs bounds the arguments PeekKey skips over: it is for hints about
// short requests (GET, SET, INCR...), not for a MSET of a thousand keys.
const peekMaxArgs = 16

// PeekKey reads the command name and first argument of the multibulk
// request at the start of buf without parsing it as Next does: it is a hint
// for a caller that wants to know what the requests after the current one
// will touch (a server prefetching their keys), and it never fails loudly.
// n is the request's length in bytes. ok is false unless buf starts with a
// complete, well-formed multibulk request of 2 to peekMaxArgs arguments;
// anything else (an inline request, a partial one, odd lengths) is left to
// Next.
func PeekKey(buf []byte) (name, key []byte, n int, ok bool) {
	name, key, _, n, ok = PeekKeyArg(buf)
	return name, key, n, ok
}

// PeekKeyArg is PeekKey that also returns the argument after the key (nil
// when the request has none): a hash command's field, for instance.
func PeekKeyArg(buf []byte) (name, key, arg []byte, n int, ok bool) {
	if len(buf) < 4 || buf[0] != '*' {
		return nil, nil, nil, 0, false
	}
	count, pos, ok := peekNumber(buf, 1)
	if !ok || count < 2 || count > peekMaxArgs {
		return nil, nil, nil, 0, false
	}
	for i := 0; i < count; i++ {
		if pos >= len(buf) || buf[pos] != '$' {
			return nil, nil, nil, 0, false
		}
		l, start, ok := peekNumber(buf, pos+1)
		end := start + l
		if !ok || end+2 > len(buf) || buf[end] != '\r' || buf[end+1] != '\n' {
			return nil, nil, nil, 0, false
		}
		switch i {
		case 0:
			name = buf[start:end]
		case 1:
			key = buf[start:end]
		case 2:
			arg = buf[start:end]
		}
		pos = end + 2
	}
	return name, key, arg, pos, true
}

// peekNumber reads the decimal number at buf[i:] up to its "\r\n" and
// returns it with the position after the line. Up to 9 digits: longer
// lengths are not worth a hint. A leading zero ("03") is refused, as Next
// refuses it (Redis's string2ll).
func peekNumber(buf []byte, i int) (v, next int, ok bool) {
	start := i
	if i+1 < len(buf) && buf[i] == '0' && buf[i+1] >= '0' && buf[i+1] <= '9' {
		return 0, 0, false
	}
	for ; i < len(buf) && buf[i] >= '0' && buf[i] <= '9'; i++ {
		if i-start == 9 {
			return 0, 0, false
		}
		v = v*10 + int(buf[i]-'0')
	}
	if i == start || i+1 >= len(buf) || buf[i] != '\r' || buf[i+1] != '\n' {
		return 0, 0, false
	}
	return v, i + 2, true
}
