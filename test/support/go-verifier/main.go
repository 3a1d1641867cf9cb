// An independent verifier of x5c-signed Agent Cards, on Go's crypto/x509 chain validation,
// go-jose and go-spiffe: it shares no code with the TypeScript verifier, so a card both accept
// (and a chain both refuse) is evidence about the format, not about one implementation.
//
//	go-verifier -card card.json -bundle ca.pem -identity 'spiffe://example.org/ns/team-a/*' [-now RFC3339] [-max-chain N]
//
// It computes the signing payload itself (RFC 8785 JSON Canonicalization of the card without
// "signatures", A2A spec section 8.4.1), validates each signature's x5c chain to the bundle at
// -now (crypto/x509 Verify), refuses an x5c header of more than -max-chain certificates (default 5,
// the limit the operator's verifier states; crypto/x509 has no such option), requires the leaf's KeyUsage to allow digitalSignature, parses the
// leaf's single URI SAN as a SPIFFE ID, matches it against -identity (exact, or a trailing /*),
// and verifies the JWS with the leaf's key. It prints one JSON line:
// {"verified":true,"identity":"spiffe://..."} or {"verified":false,"error":"..."}.
package main

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/go-jose/go-jose/v4"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

type result struct {
	Verified bool   `json:"verified"`
	Identity string `json:"identity,omitempty"`
	Error    string `json:"error,omitempty"`
}

func main() {
	cardFile := flag.String("card", "", "signed card (JSON)")
	bundleFile := flag.String("bundle", "", "trust bundle (PEM)")
	pattern := flag.String("identity", "", "identity pattern")
	nowFlag := flag.String("now", "", "verification time (RFC 3339; default now)")
	maxChain := flag.Int("max-chain", 5, "most certificates an x5c header may carry")
	flag.Parse()
	res := run(*cardFile, *bundleFile, *pattern, *nowFlag, *maxChain)
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func run(cardFile, bundleFile, pattern, nowFlag string, maxChain int) result {
	fail := func(err error) result { return result{Error: err.Error()} }
	now := time.Now()
	if nowFlag != "" {
		t, err := time.Parse(time.RFC3339, nowFlag)
		if err != nil {
			return fail(err)
		}
		now = t
	}
	roots := x509.NewCertPool()
	pemBytes, err := os.ReadFile(bundleFile)
	if err != nil {
		return fail(err)
	}
	for block, rest := pem.Decode(pemBytes); block != nil; block, rest = pem.Decode(rest) {
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return fail(fmt.Errorf("bundle: %w", err))
		}
		roots.AddCert(cert)
	}
	raw, err := os.ReadFile(cardFile)
	if err != nil {
		return fail(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var card map[string]any
	if err := dec.Decode(&card); err != nil {
		return fail(err)
	}
	sigs, _ := card["signatures"].([]any)
	delete(card, "signatures")
	var payload bytes.Buffer
	if err := canonical(&payload, card); err != nil {
		return fail(err)
	}
	var errs []string
	for i, s := range sigs {
		identity, err := verifyOne(s, payload.Bytes(), roots, pattern, now, maxChain)
		if err == nil {
			return result{Verified: true, Identity: identity}
		}
		errs = append(errs, fmt.Sprintf("signatures[%d]: %v", i, err))
	}
	if len(errs) == 0 {
		errs = append(errs, "no signatures")
	}
	return result{Error: strings.Join(errs, "; ")}
}

func verifyOne(s any, payload []byte, roots *x509.CertPool, pattern string, now time.Time, maxChain int) (string, error) {
	entry, _ := s.(map[string]any)
	protected, _ := entry["protected"].(string)
	signature, _ := entry["signature"].(string)
	algs := []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.EdDSA, jose.RS256, jose.PS256}
	jws, err := jose.ParseDetached(protected+".."+signature, payload, algs)
	if err != nil {
		return "", fmt.Errorf("parse: %w", err)
	}
	// go-jose keeps the parsed x5c to itself: the count comes from the protected header.
	var raw struct {
		X5c []string `json:"x5c"`
	}
	if b, err := base64.RawURLEncoding.DecodeString(protected); err == nil && json.Unmarshal(b, &raw) == nil && len(raw.X5c) > maxChain {
		return "", fmt.Errorf("chain: x5c has %d certificates, more than the limit of %d", len(raw.X5c), maxChain)
	}
	header := jws.Signatures[0].Protected
	chains, err := header.Certificates(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return "", fmt.Errorf("chain: %w", err)
	}
	leaf := chains[0][0]
	if leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return "", errors.New("leaf: KeyUsage does not allow digitalSignature")
	}
	if len(leaf.URIs) != 1 {
		return "", fmt.Errorf("leaf: %d URI SANs", len(leaf.URIs))
	}
	id, err := spiffeid.FromURI(leaf.URIs[0])
	if err != nil {
		return "", fmt.Errorf("leaf: %w", err)
	}
	if !matches(pattern, id.String()) {
		return "", fmt.Errorf("identity %s does not match %s", id, pattern)
	}
	if _, err := jws.Verify(leaf.PublicKey); err != nil {
		return "", fmt.Errorf("signature: %w", err)
	}
	return id.String(), nil
}

func matches(pattern, identity string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasSuffix(prefix, "/") {
		return len(identity) > len(prefix) && strings.HasPrefix(identity, prefix)
	}
	return pattern == identity
}

// canonical writes RFC 8785 JSON: object members sorted by their UTF-16 code units, strings
// escaped minimally, numbers in ECMAScript form (section 3.2.2.3).
func canonical(w *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		w.WriteString("null")
	case bool:
		w.WriteString(strconv.FormatBool(x))
	case string:
		writeString(w, x)
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("number %s", x)
		}
		w.WriteString(esNumber(f))
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := canonical(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return utf16Less(keys[i], keys[j]) })
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			writeString(w, k)
			w.WriteByte(':')
			if err := canonical(w, x[k]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

func utf16Less(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func writeString(w *bytes.Buffer, s string) {
	w.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			w.WriteString(`\"`)
		case '\\':
			w.WriteString(`\\`)
		case '\b':
			w.WriteString(`\b`)
		case '\f':
			w.WriteString(`\f`)
		case '\n':
			w.WriteString(`\n`)
		case '\r':
			w.WriteString(`\r`)
		case '\t':
			w.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(w, `\u%04x`, r)
			} else {
				w.WriteRune(r)
			}
		}
	}
	w.WriteByte('"')
}

// esNumber formats like ECMAScript Number.prototype.toString for the values cards hold.
func esNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	n, _ := strconv.Atoi(exp)
	if n > 0 {
		return mant + "e+" + strconv.Itoa(n)
	}
	return mant + "e" + strconv.Itoa(n)
}
