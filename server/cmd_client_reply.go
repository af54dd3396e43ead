package server

// CLIENT REPLY ON|OFF|SKIP: a client may ask for no replies (OFF), or for
// none to its next command (SKIP). Replies are produced as usual and cut
// off the output buffer after the command, so every command behaves the
// same whether or not its reply is wanted.

const (
	replyOn uint8 = iota
	replyOff
	replySkipNext // the next command's reply is dropped
)

// replyState is a client's CLIENT REPLY mode.
type replyState struct {
	mode    uint8
	changed bool // CLIENT REPLY ran in the current command
}

// begin notes where the running command's replies start and the mode it
// started in.
func (r *replyState) begin(c *Client) (int, uint8) {
	r.changed = false
	return len(c.out), r.mode
}

// after drops the replies of a command that ran in mode OFF or SKIP,
// except the +OK of CLIENT REPLY ON.
func (r *replyState) after(c *Client, mark int, mode uint8) {
	if r.changed {
		r.changed = false
		if r.mode == replyOn {
			return
		}
	} else if mode == replySkipNext {
		r.mode = replyOn
	}
	if mode != replyOn && mark <= len(c.out) {
		c.out = c.out[:mark]
	}
}

func (c *Client) clientReply(args [][]byte) {
	if len(args) != 3 {
		c.err("ERR wrong number of arguments for 'client|reply' command")
		return
	}
	switch {
	case eq(args[2], "on"):
		c.reply.mode, c.reply.changed = replyOn, true
		c.ok()
	case eq(args[2], "off"):
		c.reply.mode, c.reply.changed = replyOff, true
	case eq(args[2], "skip"):
		c.reply.mode, c.reply.changed = replySkipNext, true
	default:
		c.errSyntax()
	}
}
