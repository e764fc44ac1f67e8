package devcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of the generated certificates and keys.
type pki struct {
	CACert, CAKey           string
	ServingCert, ServingKey string
	AdminCert, AdminKey     string
	// KubeletClientCert and KubeletClientKey are the apiserver's client
	// certificate towards kubelets (logs, exec, port-forward).
	KubeletClientCert, KubeletClientKey string
	SAKey, SAPub                        string

	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

// generatePKI writes a CA, an apiserver serving certificate for loopback
// (and extraIPs), an admin client certificate (group system:masters) and a
// service-account signing key pair into dir.
func generatePKI(dir string, extraIPs ...net.IP) (*pki, error) {
	p := &pki{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		KubeletClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"), KubeletClientKey: filepath.Join(dir, "apiserver-kubelet-client.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tfccm-devcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	if err := writeCert(p.CACert, caDER); err != nil {
		return nil, err
	}
	if err := writeECKey(p.CAKey, caKey); err != nil {
		return nil, err
	}
	p.caCert, p.caKey = caCert, caKey
	leaf := func(serial int64, cn string, orgs []string, usage x509.ExtKeyUsage, ips []net.IP, dns []string, certPath, keyPath string) error {
		return p.leaf(big.NewInt(serial), cn, orgs, usage, ips, dns, certPath, keyPath)
	}
	if err := leaf(2, "kube-apiserver", nil, x509.ExtKeyUsageServerAuth,
		append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, extraIPs...),
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		p.ServingCert, p.ServingKey); err != nil {
		return nil, err
	}
	if err := leaf(3, "tfccm-admin", []string{"system:masters"}, x509.ExtKeyUsageClientAuth, nil, nil, p.AdminCert, p.AdminKey); err != nil {
		return nil, err
	}
	if err := leaf(4, "kube-apiserver-kubelet-client", []string{"system:masters"}, x509.ExtKeyUsageClientAuth, nil, nil, p.KubeletClientCert, p.KubeletClientKey); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate service-account key: %w", err)
	}
	if err := os.WriteFile(p.SAKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.SAPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// leaf writes a certificate signed by the CA and its key.
func (p *pki) leaf(serial *big.Int, cn string, orgs []string, usage x509.ExtKeyUsage, ips []net.IP, dns []string, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate key for %s: %w", cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return fmt.Errorf("create certificate for %s: %w", cn, err)
	}
	if err := writeCert(certPath, der); err != nil {
		return err
	}
	return writeECKey(keyPath, key)
}

// clientCert writes a client certificate for user cn in groups orgs.
func (p *pki) clientCert(cn string, orgs []string, certPath, keyPath string) error {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	return p.leaf(serial.Add(serial, big.NewInt(100)), cn, orgs, x509.ExtKeyUsageClientAuth, nil, nil, certPath, keyPath)
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
