package server

// subcommandHandler serves one subcommand of a container command (FUNCTION
// LOAD, ACL SETUSER, ...). args is the whole command: args[0] the
// container, args[1] the subcommand.
type subcommandHandler func(c *Client, args [][]byte)

// dispatchSubcommand runs the handler of args[1] from table (keyed by the
// lowercase subcommand name), or answers Redis's unknown-subcommand error,
// which points at "<container> HELP". Tables are fixed at compile time and
// never written.
func dispatchSubcommand(c *Client, args [][]byte, table map[string]subcommandHandler, container string) {
	if h, ok := table[lower(args[1])]; ok {
		h(c, args)
		return
	}
	c.err("ERR unknown subcommand '" + sanitize(args[1], 128) + "'. Try " + container + " HELP.")
}
