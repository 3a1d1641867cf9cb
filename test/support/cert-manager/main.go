// A cert-manager controller for the tests: cert-manager's own controllers (package
// github.com/cert-manager/cert-manager/pkg/controller, from the Go module proxy) run against the
// test control plane. The release's cmd/controller is a separate Go module that the proxy does not
// serve, so this small main does its wiring: it builds the controller context, starts the
// controllers needed for Certificates issued by a CA or self-signed Issuer, then the informers.
// Each test file runs its own, confined to its namespace (-namespace). No leader election, no webhook (the CRDs are v1 only, so nothing needs converting), no ACME.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// The controllers a CA or SelfSigned Issuer needs, as the release enables them by default.
var controllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
	approver.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	namespace := flag.String("namespace", "", "the only namespace to act in (empty: all, with ClusterIssuers)")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager", "namespace of ClusterIssuer Secrets")
	flag.Parse()
	if err := run(*kubeconfig, *namespace, *clusterResourceNamespace); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, clusterResourceNamespace string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		Namespace:          namespace,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: clusterResourceNamespace},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Second,
			CertificateRequestMaximumBackoffDuration: 10 * time.Second,
		},
	})
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(controllers))
	for _, name := range controllers {
		// ClusterIssuers are cluster-wide: a controller confined to one namespace leaves them alone,
		// so that test files can each run their own without acting on each other's resources.
		if namespace != "" && name == clusterissuers.ControllerName {
			continue
		}
		construct, ok := controllerpkg.Known()[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %q: %w", name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(2, ctx); err != nil {
				errs <- fmt.Errorf("controller %q: %w", name, err)
			}
		}()
	}

	// The informers are shared by every controller built from the factory: start them once all
	// controllers have registered the ones they use.
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	fmt.Println("cert-manager controllers started")

	select {
	case err := <-errs:
		stop()
		wg.Wait()
		return err
	case <-ctx.Done():
		wg.Wait()
		return nil
	}
}
