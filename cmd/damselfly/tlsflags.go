package main

import (
	"fmt"

	"github.com/damselflydb/damselfly/server"
)

// tlsFlags are the TLS flags, with Redis's names (server/tls.go).
type tlsFlags struct {
	Port           int    `name:"tls-port" help:"TCP port for the Redis protocol over TLS; 0 = off." default:"0" env:"DAMSELFLY_TLS_PORT"`
	CertFile       string `name:"tls-cert-file" help:"Server certificate (PEM); also the client certificate toward a TLS primary." env:"DAMSELFLY_TLS_CERT_FILE"`
	KeyFile        string `name:"tls-key-file" help:"Private key of --tls-cert-file (PEM; encrypted keys need --tls-key-file-pass)." env:"DAMSELFLY_TLS_KEY_FILE"`
	KeyFilePass    string `name:"tls-key-file-pass" help:"Passphrase of an encrypted --tls-key-file." env:"DAMSELFLY_TLS_KEY_FILE_PASS"`
	ClientCertFile string `name:"tls-client-cert-file" help:"Client certificate toward a TLS primary (default: --tls-cert-file)." env:"DAMSELFLY_TLS_CLIENT_CERT_FILE"`
	ClientKeyFile  string `name:"tls-client-key-file" help:"Private key of --tls-client-cert-file." env:"DAMSELFLY_TLS_CLIENT_KEY_FILE"`
	ClientKeyPass  string `name:"tls-client-key-file-pass" help:"Passphrase of an encrypted --tls-client-key-file." env:"DAMSELFLY_TLS_CLIENT_KEY_FILE_PASS"`
	CACertFile     string `name:"tls-ca-cert-file" help:"CA certificates (PEM) that client and primary certificates are checked against." env:"DAMSELFLY_TLS_CA_CERT_FILE"`
	CACertDir      string `name:"tls-ca-cert-dir" help:"Directory of CA certificate files (PEM)." env:"DAMSELFLY_TLS_CA_CERT_DIR"`
	AuthClients    string `name:"tls-auth-clients" help:"Client certificates: yes (required), optional (checked when given) or no." default:"yes" enum:"yes,no,optional" env:"DAMSELFLY_TLS_AUTH_CLIENTS"`
	Protocols      string `name:"tls-protocols" help:"TLS versions, e.g. \"TLSv1.2 TLSv1.3\" (the default)." env:"DAMSELFLY_TLS_PROTOCOLS"`
	Ciphers        string `name:"tls-ciphers" help:"TLS 1.2 cipher list, OpenSSL names separated by colons (default: Go's secure set)." env:"DAMSELFLY_TLS_CIPHERS"`
	CipherSuites   string `name:"tls-ciphersuites" help:"TLS 1.3 suites (checked; Go always offers its three)." env:"DAMSELFLY_TLS_CIPHERSUITES"`
	Replication    yesno  `name:"tls-replication" help:"Connect to the primary over TLS (yes/no)." default:"no" env:"DAMSELFLY_TLS_REPLICATION"`
	MemcachedPort  int    `name:"memcached-tls-port" help:"TCP port for the Memcached text protocol over TLS; 0 = off." default:"0" env:"DAMSELFLY_MEMCACHED_TLS_PORT"`
}

func (f tlsFlags) config() server.TLSConfig {
	return server.TLSConfig{Port: f.Port, CertFile: f.CertFile, KeyFile: f.KeyFile,
		ClientCertFile: f.ClientCertFile, ClientKeyFile: f.ClientKeyFile,
		KeyFilePass: f.KeyFilePass, ClientKeyFilePass: f.ClientKeyPass,
		CACertFile: f.CACertFile, CACertDir: f.CACertDir, AuthClients: f.AuthClients,
		Protocols: f.Protocols, Ciphers: f.Ciphers, CipherSuites: f.CipherSuites,
		Replication: bool(f.Replication), MemcachedPort: f.MemcachedPort}
}

func (f tlsFlags) validate() error {
	if f.Port < 0 || f.Port > 65535 {
		return fmt.Errorf("--tls-port %d: must be 0..65535", f.Port)
	}
	if f.MemcachedPort < 0 || f.MemcachedPort > 65535 {
		return fmt.Errorf("--memcached-tls-port %d: must be 0..65535", f.MemcachedPort)
	}
	if (f.Port != 0 || f.MemcachedPort != 0 || f.Replication) && (f.CertFile == "" || f.KeyFile == "") {
		return fmt.Errorf("TLS needs --tls-cert-file and --tls-key-file")
	}
	return server.CheckTLSConfig(f.config())
}
