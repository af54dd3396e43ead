// Package scripting is Damselfly's Lua scripting engine: EVAL scripts and
// FUNCTION libraries with Redis 7.0's semantics, on gopher-lua (Lua 5.1).
//
// The server owns connections, locking and dispatch; it reaches this
// package through Engine, and the engine reaches the dataset only through
// the Caller the server passes with each run (one command at a time, whose
// RESP2 reply the engine converts to Lua values with Redis's rules).
//
// Invariants:
//   - One script runs at a time (Engine.Run serializes runs). The caller
//     is expected to hold whatever makes the run atomic (the server locks
//     every shard first); the engine takes no lock of the caller's.
//   - Two Lua states: one shared by every EVAL script, one holding every
//     FUNCTION library. In both the global table, the redis table and every
//     library table (string, table, math, coroutine, cjson, bit, struct,
//     cmsgpack) are read-only, as in Redis 7: a script sees them through
//     empty proxies whose writes fail with "Attempt to modify a readonly
//     table", and rawset/setmetatable refuse them, so no script can change
//     what a later script sees. Only KEYS and ARGV are set, by the engine.
//   - print, getfenv, setfenv, debug, os, io, require, module, dofile,
//     loadfile and newproxy are absent, as in Redis 7.0.
//   - A running script can be killed (SCRIPT KILL / FUNCTION KILL) until
//     the first command it runs changes the dataset; the VM stops at its
//     next instruction through its context. Compile and runtime errors and
//     Go panics become error replies; nothing here takes the server down.
//   - The engine holds no goroutines and no package-level mutable state.
//
// See docs/architecture.md (Scripts) for how the server runs scripts
// without blocking its event loops.
package scripting
