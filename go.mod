module github.com/driftwoodlabs/driftwood

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
