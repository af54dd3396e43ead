package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/youmark/pkcs8"
)

// loadKeyPair is tls.LoadX509KeyPair with tls-key-file-pass: when pass is
// set, the key may be encrypted, either PKCS#8 ("ENCRYPTED PRIVATE KEY",
// what `openssl genpkey -aes256` and OpenSSL 3's `genrsa -aes256` write)
// or a legacy OpenSSL PEM with a Proc-Type header. An unencrypted key
// loads whatever pass is, as in Redis.
func loadKeyPair(certFile, keyFile, pass string) (tls.Certificate, error) {
	if pass == "" {
		return tls.LoadX509KeyPair(certFile, keyFile)
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return tls.Certificate{}, fmt.Errorf("%s: no PEM block", keyFile)
	}
	var der []byte
	switch {
	case block.Type == "ENCRYPTED PRIVATE KEY":
		key, err := pkcs8.ParsePKCS8PrivateKey(block.Bytes, []byte(pass))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: cannot decrypt the key with tls-key-file-pass: %w", keyFile, err)
		}
		if der, err = x509.MarshalPKCS8PrivateKey(key); err != nil {
			return tls.Certificate{}, err
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	//lint:ignore SA1019 legacy OpenSSL encryption is what older tooling writes; Go still reads it.
	case x509.IsEncryptedPEMBlock(block): //nolint:staticcheck
		//lint:ignore SA1019 see above
		der, err = x509.DecryptPEMBlock(block, []byte(pass)) //nolint:staticcheck
		if err != nil {
			if errors.Is(err, x509.IncorrectPasswordError) {
				return tls.Certificate{}, fmt.Errorf("%s: wrong tls-key-file-pass", keyFile)
			}
			return tls.Certificate{}, fmt.Errorf("%s: %w", keyFile, err)
		}
		block = &pem.Block{Type: block.Type, Bytes: der}
	}
	return tls.X509KeyPair(certPEM, pem.EncodeToMemory(block))
}
