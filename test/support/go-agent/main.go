// A real A2A agent built with github.com/a2aproject/a2a-go (v0.3.x): it serves its own 0.3-shaped
// card at /.well-known/agent-card.json and answers JSON-RPC at /invoke. The tests adopt its card
// (spec.source) and probe the endpoint the card names.
//
// Flags: -listen host:port (":0" picks a port), -url (the card's url; default the listener's
// http://<addr>/invoke), -version-file (read on every card request, so a test changes the card
// by writing the file; default version "1.0.0"). It prints the bound address on stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

type executor struct{}

func (*executor) Execute(ctx context.Context, _ *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "hello"}))
}

func (*executor) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error {
	return nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	cardURL := flag.String("url", "", "the card's url (default: http://<listener>/invoke)")
	versionFile := flag.String("version-file", "", "file holding the card's version, read on each request")
	flag.Parse()

	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	url := *cardURL
	if url == "" {
		url = fmt.Sprintf("http://%s/invoke", listener.Addr().String())
	}
	producer := a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		version := "1.0.0"
		if *versionFile != "" {
			if b, err := os.ReadFile(*versionFile); err == nil {
				version = strings.TrimSpace(string(b))
			}
		}
		return &a2a.AgentCard{
			Name:               "Go Hello Agent",
			Description:        "A hello agent built with a2a-go",
			URL:                url,
			PreferredTransport: a2a.TransportProtocolJSONRPC,
			ProtocolVersion:    "0.3.0",
			Version:            version,
			DefaultInputModes:  []string{"text/plain"},
			DefaultOutputModes: []string{"text/plain"},
			Capabilities:       a2a.AgentCapabilities{Streaming: true},
			Skills: []a2a.AgentSkill{{
				ID:          "hello",
				Name:        "Hello",
				Description: "Says hello",
				Tags:        []string{"hello"},
			}},
		}, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/invoke", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(&executor{})))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(producer))
	fmt.Println(listener.Addr().String())
	log.Fatal(http.Serve(listener, mux))
}
