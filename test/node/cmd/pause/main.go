// Command pause is the test node's init process and its Pods' sandbox container (the job of
// registry.k8s.io/pause, whose C source is not a Go module): it reaps every child that is
// re-parented to it, and exits on SIGTERM or SIGINT. As the node's init (PID 1 of the node's PID
// namespace) its exit makes the kernel kill every process of the node, containers included.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
