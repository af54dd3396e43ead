package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/youmark/pkcs8"
)

// TestTLSEncryptedKey: the server starts from an encrypted key with
// tls-key-file-pass (PKCS#8 as OpenSSL 3 writes it, and the legacy
// OpenSSL PEM form), serves go-redis over TLS, and a wrong passphrase is
// refused by name.
func TestTLSEncryptedKey(t *testing.T) {
	p := newTestPKI(t)
	key, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	priv := key.PrivateKey.(*ecdsa.PrivateKey)
	pkcs8File := filepath.Join(p.dir, "server-pkcs8.key")
	der, err := pkcs8.MarshalPrivateKey(priv, []byte("s3cret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, pkcs8File, "ENCRYPTED PRIVATE KEY", der)

	legacyFile := filepath.Join(p.dir, "server-legacy.key")
	ecder, _ := x509.MarshalECPrivateKey(priv)
	//lint:ignore SA1019 the legacy form is what is being tested
	blk, err := x509.EncryptPEMBlock(rand.Reader, "EC PRIVATE KEY", ecder, []byte("s3cret"), x509.PEMCipherAES256) //nolint:staticcheck
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legacyFile, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"pkcs8": pkcs8File, "legacy": legacyFile}
	// OpenSSL's own output, when the tool is here.
	if ossl, err := exec.LookPath("openssl"); err == nil {
		f := filepath.Join(p.dir, "server-openssl.key")
		out, err := exec.Command(ossl, "pkcs8", "-topk8", "-in", p.keyFile, "-out", f, "-passout", "pass:s3cret", "-v2", "aes-256-cbc").CombinedOutput()
		if err != nil {
			t.Fatalf("openssl: %v\n%s", err, out)
		}
		files["openssl"] = f
	}
	for name, file := range files {
		t.Run(name, func(t *testing.T) {
			cfg := p.serverTLS("no")
			cfg.KeyFile, cfg.KeyFilePass = file, "s3cret"
			s := startServer(t, func(c *Config) { c.TLS = cfg })
			rdb := tlsClient(t, s.TLSAddr(), &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1"})
			if err := rdb.Set(context.Background(), "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			_, _, err = buildTLS(tlsSettings{certFile: p.certFile, keyFile: file, keyPass: "wrong"})
			if err == nil || !strings.Contains(err.Error(), file) {
				t.Fatalf("wrong passphrase: %v", err)
			}
		})
	}
}
