module agentcard.dev/test/go-agent

go 1.24.4

require github.com/a2aproject/a2a-go v0.3.3

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/sync v0.15.0 // indirect
)
