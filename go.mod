module github.com/driftwoodlabs/driftwood

go 1.26.8

require (
	github.com/nikolalohinski/gonja/v2 v2.9.1
	github.com/pelletier/go-toml/v2 v2.4.3
	golang.org/x/sys v0.50.0
)

require (
	github.com/bytecodealliance/wasmtime-go/v39 v39.0.1 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	golang.org/x/exp v0.0.0-20240719175910-8a7402abbf56 // indirect
	golang.org/x/text v0.23.0 // indirect
)
