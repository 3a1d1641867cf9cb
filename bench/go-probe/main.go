// The floor of one probe's CPU: the JSON-RPC probe of the operator (A2A GetTask for a random task
// id, POST with a JSON body, the answer read and parsed as JSON) on Go's net/http, each probe on
// a fresh connection (keep-alives off), as the operator's probe does. It runs -n probes from -c
// goroutines against -url and prints one JSON line: probes, errors, the process's CPU seconds
// (user + system, from getrusage) spent while probing, and the wall time.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type result struct {
	Probes     int64   `json:"probes"`
	Errors     int64   `json:"errors"`
	CPUSeconds float64 `json:"cpuSeconds"`
	Seconds    float64 `json:"seconds"`
	FirstError string  `json:"firstError,omitempty"`
}

func cpuSeconds() float64 {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return float64(u.Utime.Sec+u.Stime.Sec) + float64(u.Utime.Usec+u.Stime.Usec)/1e6
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func main() {
	url := flag.String("url", "", "JSON-RPC endpoint of an A2A 1.0 agent")
	n := flag.Int("n", 5000, "probes")
	c := flag.Int("c", 16, "probes in flight")
	flag.Parse()

	client := &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		Timeout:   5 * time.Second,
		// No redirects, as the operator's probe.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	var res result
	var once sync.Once
	one := func() {
		body, _ := json.Marshal(map[string]any{
			"jsonrpc": "2.0",
			"id":      "agentcard-probe-" + randomID(),
			"method":  "GetTask",
			"params":  map[string]any{"id": randomID()},
		})
		req, _ := http.NewRequest(http.MethodPost, *url, bytes.NewReader(body))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("accept", "application/json")
		req.Header.Set("a2a-version", "1.0")
		req.Header.Set("user-agent", "agentcard-probe/1")
		resp, err := client.Do(req)
		if err == nil {
			var answer map[string]any
			data, rerr := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
			resp.Body.Close()
			err = rerr
			if err == nil {
				err = json.Unmarshal(data, &answer)
			}
		}
		atomic.AddInt64(&res.Probes, 1)
		if err != nil {
			atomic.AddInt64(&res.Errors, 1)
			once.Do(func() { res.FirstError = err.Error() })
		}
	}
	start, cpu0 := time.Now(), cpuSeconds()
	var next int64
	var wg sync.WaitGroup
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.AddInt64(&next, 1) <= int64(*n) {
				one()
			}
		}()
	}
	wg.Wait()
	res.CPUSeconds = cpuSeconds() - cpu0
	res.Seconds = time.Since(start).Seconds()
	out, _ := json.Marshal(res)
	fmt.Fprintln(os.Stdout, string(out))
}
