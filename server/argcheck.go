package server

// Argument range checks shared by commands whose Redis counterpart parses a
// C int (getIntFromObjectOrReply): the same error texts for the same inputs.

// parseInt32Arg parses a 32-bit integer argument, replying Redis's error
// when it is not one.
func parseInt32Arg(c *Client, b []byte) (int64, bool) {
	n, ok := parseInt(b)
	if !ok {
		c.errNotInteger()
		return 0, false
	}
	if n < -1<<31 || n > 1<<31-1 {
		c.err("ERR value is out of range, value must between -2147483648 and 2147483647")
		return 0, false
	}
	return n, true
}
