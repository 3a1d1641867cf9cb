// CoreDNS for the test node, built with only the plugins the node's Corefile uses
// (coreDnsManifests in test/node/control.ts): `go install github.com/coredns/coredns@v1.15.0`
// compiles every plugin of the release (the cloud DNS SDKs, etcd, dnstap, tracing...) and was the
// largest part of a cold node build. This is CoreDNS's own way of choosing plugins at compile
// time: the release's coremain with a smaller directive list and only those plugins imported
// (core/dnsserver's SetDirectives; upstream does the same from plugin.cfg). This module requires
// nothing but coredns v1.15.0, so every other module is at the version the release's go.mod pins.
package main

import (
	"fmt"
	"os"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The Corefile's directives, in the execution order of the release's plugin.cfg (the order
// decides which plugin sees a query first, not the order in the Corefile). health and ready serve
// the Deployment's liveness and readiness probes.
var directives = []string{
	"ready",
	"health",
	"errors",
	"cache",
	"kubernetes",
	"loop",
}

func main() {
	if err := dnsserver.SetDirectives(directives); err != nil {
		fmt.Fprintln(os.Stderr, "coredns:", err)
		os.Exit(1)
	}
	coremain.Run()
}
