// A load client built on Go's net/http, the HTTP stack of many proxies and meshes in front of the
// sidecar (Caddy, Traefik, ...). Go's Transport reads any byte a server sends after a response
// as the start of the next one, so a stray body after a HEAD answer or a connection closed while
// the Transport reuses it shows up here as an error.
//
// It sends -n requests, alternating HEAD and GET, from -c goroutines sharing one Transport (so
// connections are reused), optionally pausing -pause in the middle with the connections idle.
// It prints one JSON line: the counts and the first errors.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

type result struct {
	Requests    int64    `json:"requests"`
	Errors      int64    `json:"errors"`
	NewConns    int64    `json:"newConns"`
	ReusedConns int64    `json:"reusedConns"`
	FirstErrors []string `json:"firstErrors"`
}

func main() {
	url := flag.String("url", "", "URL to request")
	host := flag.String("host", "", "Host header (default: from the URL)")
	n := flag.Int("n", 10000, "requests")
	c := flag.Int("c", 8, "concurrent clients")
	bodySHA := flag.String("sha256", "", "expected sha256 (hex) of the GET body")
	pause := flag.Duration("pause", 0, "idle pause after half of the requests")
	flag.Parse()

	transport := &http.Transport{MaxIdleConnsPerHost: *c, IdleConnTimeout: 10 * time.Minute}
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	var res result
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		atomic.AddInt64(&res.Errors, 1)
		mu.Lock()
		if len(res.FirstErrors) < 5 {
			res.FirstErrors = append(res.FirstErrors, fmt.Sprintf(format, args...))
		}
		mu.Unlock()
	}
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if info.Reused {
			atomic.AddInt64(&res.ReusedConns, 1)
		} else {
			atomic.AddInt64(&res.NewConns, 1)
		}
	}}

	one := func(i int) {
		method := http.MethodGet
		if i%2 == 0 {
			method = http.MethodHead
		}
		req, err := http.NewRequest(method, *url, nil)
		if err != nil {
			fail("%v", err)
			return
		}
		if *host != "" {
			req.Host = *host
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := client.Do(req)
		atomic.AddInt64(&res.Requests, 1)
		if err != nil {
			fail("%s: %v", method, err)
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			fail("%s: reading the body: %v", method, err)
			return
		}
		if resp.StatusCode != http.StatusOK {
			fail("%s: status %d", method, resp.StatusCode)
			return
		}
		if method == http.MethodHead && len(body) != 0 {
			fail("HEAD: %d body bytes", len(body))
			return
		}
		if method == http.MethodGet && *bodySHA != "" {
			sum := sha256.Sum256(body)
			if hex.EncodeToString(sum[:]) != *bodySHA || !bytes.HasPrefix(body, []byte("{")) {
				fail("GET: unexpected body (%d bytes)", len(body))
			}
		}
	}

	run := func(from, to int) {
		var next int64 = int64(from)
		var wg sync.WaitGroup
		for w := 0; w < *c; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(atomic.AddInt64(&next, 1) - 1)
					if i >= to {
						return
					}
					one(i)
				}
			}()
		}
		wg.Wait()
	}
	if *pause > 0 {
		run(0, *n/2)
		time.Sleep(*pause)
		run(*n/2, *n)
	} else {
		run(0, *n)
	}
	if res.FirstErrors == nil {
		res.FirstErrors = []string{}
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
}
