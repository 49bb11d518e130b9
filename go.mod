module github.com/agenttrainer/agenttrainer

go 1.26.8

require (
	github.com/BurntSushi/toml v1.5.0
	github.com/charmbracelet/x/term v0.2.2
)

require golang.org/x/sys v0.36.0 // indirect
