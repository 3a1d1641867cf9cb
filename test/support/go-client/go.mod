module agentcard.dev/test/go-client

go 1.24
