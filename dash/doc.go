// Package dash implements a Dashtable.
package dash
