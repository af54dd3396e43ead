package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTLSFlagErrors: TLS flags that cannot work stop start-up with exit
// code 2 and say which flag is wrong.
func TestTLSFlagErrors(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-port", "6380"}, "--tls-cert-file and --tls-key-file"},
		{[]string{"--tls-auth-clients", "maybe"}, "--tls-auth-clients"},
		{[]string{"--tls-port", "6380", "--tls-cert-file", "c", "--tls-key-file", "k", "--tls-protocols", "SSLv3"}, "--tls-protocols"},
		{[]string{"--tls-port", "6380", "--tls-cert-file", "c", "--tls-key-file", "k", "--tls-ciphers", "NOPE-CIPHER"}, "--tls-ciphers"},
		{[]string{"--memcached-tls-port", "70000"}, "--memcached-tls-port"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: %v %q", tc.args, err, out)
		}
	}
}
