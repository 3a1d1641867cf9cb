// Command node-pki adds the client certificates of the test node's components to a directory
// that test/controlplane's pki command has filled: it signs them with that CA (ca.crt, ca.key).
// Each component gets the identity the bootstrap RBAC roles and the Node authorizer expect
// (https://kubernetes.io/docs/reference/access-authn-authz/rbac/#core-component-roles):
// system:node:<name> in system:nodes for the kubelet, system:kube-proxy, system:kube-scheduler;
// and system:kube-router, which has no bootstrap role (control.ts binds it to one of its own).
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

func main() {
	dir := flag.String("dir", "", "directory holding ca.crt and ca.key, where the certificates are written")
	node := flag.String("node", "", "the node's name (the kubelet's identity is system:node:<name>)")
	flag.Parse()
	if *dir == "" || *node == "" {
		fmt.Fprintln(os.Stderr, "node-pki: -dir and -node are required")
		os.Exit(2)
	}
	if err := run(*dir, *node); err != nil {
		fmt.Fprintln(os.Stderr, "node-pki:", err)
		os.Exit(1)
	}
}

func run(dir, node string) error {
	caCert, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	clients := map[string]pkix.Name{
		"kubelet":    {CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		"kube-proxy": {CommonName: "system:kube-proxy"},
		"scheduler":  {CommonName: "system:kube-scheduler"},
		// kube-router's network policy controller (RBAC: control.ts, firewallRbac).
		"kube-router": {CommonName: "system:kube-router"},
	}
	for name, subject := range clients {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial,
			Subject:      subject,
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     caCert.NotAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".key"), "PRIVATE KEY", keyDER, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func loadCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, nil, err
	}
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, nil, errors.New("ca.crt or ca.key is not PEM")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("ca.key is not a signing key")
	}
	return cert, signer, nil
}

func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), mode)
}
