module agentcard.dev/bench/go-probe

go 1.24
